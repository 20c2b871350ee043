"""``simpler.worker.Worker``: one device at level 2, addressed by registration ids.

    w = Worker(level=2, device_id=0, platform="a2a3sim", runtime=compiled.runtime_name)
    w.init()
    orch_args, coerced, return_style = compiled.build_orch_args(*args, worker=w)
    cid = w.register(compiled.chip_callable)
    w.run(cid, orch_args, compiled.build_call_config())
    w.unregister(cid)
    w.close()
"""

from __future__ import annotations

from pypto.runtime.config import RunConfig
from pypto.runtime.extraction import CallConfig, ChipCallable, OrchArgs
from pypto.runtime.worker import RUNTIME, ChipWorker


class Worker:
    def __init__(self, level: int = 2, device_id: int = 0, platform: str = "a2a3sim", runtime: str = RUNTIME):
        self._chip = ChipWorker(RunConfig(platform=platform, device_id=device_id), level=level, runtime=runtime,
                                auto_init=False)
        self._handles: dict = {}  # cid -> RegistrationHandle

    @property
    def platform(self) -> str:
        return self._chip.platform

    @property
    def device_id(self) -> int:
        return self._chip.device_id

    def init(self) -> None:
        self._chip.init()

    def close(self) -> None:
        self._chip.close()
        self._handles.clear()

    def __enter__(self) -> Worker:
        self.init()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def register(self, chip_callable: ChipCallable) -> int:
        """The program loaded on the device; its registration id (the same program registered
        again: the same id)."""
        if not isinstance(chip_callable, ChipCallable):
            raise TypeError(f"Worker.register takes a compiled program's chip_callable, not "
                            f"{type(chip_callable).__name__}")
        handle = self._chip.register(chip_callable.compiled)
        self._handles[handle.cid] = handle
        return handle.cid

    def unregister(self, cid: int) -> None:
        self._handle(cid, "unregister").unregister()
        del self._handles[cid]

    def run(self, cid: int, orch_args: OrchArgs, config: CallConfig | None = None) -> None:
        """One dispatch of the registered program with ``orch_args``: the coerced list's
        tensors are written in place (the outputs at ``output_indices``)."""
        handle = self._handle(cid, "run")
        if not isinstance(orch_args, OrchArgs) or orch_args.callable.compiled is not handle.compiled:
            raise ValueError(f"orch_args were not built for registration {cid} ('{handle.compiled.name}'): build "
                             "them with that program's build_orch_args")
        if config is not None and not isinstance(config, CallConfig):
            raise TypeError(f"config={config!r} is not a CallConfig: build it with compiled.build_call_config()")
        run_config = config.config if config is not None else None
        if run_config is not None and run_config.platform != self.platform:
            raise ValueError(f"the CallConfig runs platform {run_config.platform!r} and this Worker is a "
                             f"{self.platform!r} device: build the call config with a RunConfig of the same platform")
        self._chip.run(handle.compiled, *orch_args.args, config=run_config)

    def _handle(self, cid: int, what: str):
        handle = self._handles.get(cid)
        if handle is None:
            raise ValueError(f"Worker.{what}: {cid} is no registration of this worker (registered: "
                             f"{sorted(self._handles) or 'none'})")
        return handle
