"""``DistributedConfig``: the devices a host orchestrator's ranks run on (rank r on
``device_ids[r]``)."""

from __future__ import annotations

import attrs

from pypto.errors import ConfigError


def _device_ids(value) -> tuple:
    ids = tuple(value) if isinstance(value, (list, tuple, range)) else None
    if not ids or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in ids):
        raise ConfigError(f"DistributedConfig(device_ids={value!r}): a non-empty list of device ids (ints >= 0)",
                          hint="DistributedConfig(device_ids=[0, 1])")
    if len(set(ids)) != len(ids):
        raise ConfigError(f"DistributedConfig(device_ids={list(ids)}) names a device twice",
                          hint="one rank per device: DistributedConfig(device_ids=[0, 1])")
    return ids


@attrs.frozen
class DistributedConfig:
    """``device_ids``: one rank per device, in rank order. ``num_sub_workers``: the
    reference's host sub-workers (Python callbacks in the forked orchestrator); accepted,
    none run here (the ranks are threads of this process). ``runtime`` and
    ``aicpu_thread_num``: the reference's, accepted with no effect (the simulated chip
    schedules as one scheduler)."""

    device_ids: tuple = attrs.field(converter=_device_ids)
    num_sub_workers: int = 0
    # the reference's runtime flavour and AICPU thread count of each chip: accepted (with the
    # reference's check of the count), with no effect here, as RunConfig(aicpu_thread_num=) has none
    runtime: str = "tensormap_and_ringbuffer"
    aicpu_thread_num: int = attrs.field(default=0)

    @aicpu_thread_num.validator
    def _threads(self, attribute, value) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value == 1:
            raise ConfigError(f"DistributedConfig(aicpu_thread_num={value!r}): 0 (the chip's default) or at least 2",
                              hint="DistributedConfig(device_ids=[0, 1], aicpu_thread_num=4)")

    @property
    def nranks(self) -> int:
        return len(self.device_ids)
