"""The MindStudio Insight container (``visualize_data.bin``) the Ascend op simulator writes,
and ours too: a flat sequence of blocks, each a 12-byte header then a payload.

    header  = contentSize: u64 LE (payload bytes, padding included)
              type: u8 (1 SOURCE, 2 TRACE, 3 API_FILE, 4 API_INSTR, others skipped)
              paddingLength: u8, instrVersion: u8, reserve: u8 == 0x5A
    payload = JSON text, then paddingLength bytes of padding
              (a SOURCE payload starts with a 4096-byte, NUL-padded file path)

Reading never evaluates anything: payloads are bytes, parsed as JSON by the caller.
"""

from __future__ import annotations

import json
import math
import struct

import attrs

HEADER = struct.Struct("<QBBBB")
MAGIC = 0x5A
SOURCE, TRACE, API_FILE, API_INSTR = 1, 2, 3, 4
KINDS = {SOURCE: "SOURCE", TRACE: "TRACE", API_FILE: "API_FILE", API_INSTR: "API_INSTR"}
PATH_BYTES = 4096


class InsightFormatError(ValueError):
    """Bytes that are not a well-formed visualize_data.bin."""


@attrs.frozen
class Block:
    type: int
    payload: bytes  # without padding (and, for SOURCE, without the path prefix)
    version: int = 0
    path: str = ""  # SOURCE only

    def json(self):
        """The payload as strict JSON: NaN, Infinity and numbers too large for a double are
        refused here, so whatever is read can be written back as strict JSON."""
        what = f"{KINDS.get(self.type, f'type {self.type}')} block"
        try:
            return json.loads(self.payload.decode("utf-8"), parse_constant=_not_json, parse_float=_finite)
        except UnicodeDecodeError:
            raise InsightFormatError(f"{what} is not UTF-8 text") from None
        except RecursionError:  # the C scanner recurses once per '[' or '{'
            raise InsightFormatError(f"{what} nests arrays or objects too deeply to read") from None
        except ValueError as exc:  # JSONDecodeError, ours, and int() refusing thousands of digits
            reason = str(exc).split("; use sys.set_int_max_str_digits", 1)[0]  # advice for programmers, not users
            raise InsightFormatError(f"{what} does not hold strict JSON: {reason}") from None


def _not_json(constant: str):
    raise InsightFormatError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InsightFormatError(f"{text[:40]} does not fit in a double")
    return value


def read_blocks(data: bytes) -> list[Block]:
    blocks, offset = [], 0
    while offset + HEADER.size <= len(data):
        size, kind, padding, version, reserve = HEADER.unpack_from(data, offset)
        if reserve != MAGIC:
            raise InsightFormatError(f"corrupt block at offset {offset}: reserve byte is {reserve:#04x}, not 0x5a")
        start = offset + HEADER.size
        if size > len(data) - start:
            raise InsightFormatError(f"corrupt block at offset {offset}: size={size} but only "
                                     f"{len(data) - start} bytes remain (truncated file?)")
        if padding > size:
            raise InsightFormatError(f"corrupt block at offset {offset}: padding {padding} > size {size}")
        payload = data[start:start + size - padding]
        path = ""
        if kind == SOURCE:
            if len(payload) < PATH_BYTES:
                raise InsightFormatError(f"corrupt SOURCE block at offset {offset}: shorter than its path field")
            path = payload[:PATH_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace")
            payload = payload[PATH_BYTES:]
        blocks.append(Block(kind, payload, version, path))
        offset = start + size
    if offset != len(data):
        raise InsightFormatError(f"{len(data) - offset} trailing bytes at offset {offset} are not a whole block "
                                 "header (truncated file?)")
    return blocks


def encode_block(kind: int, payload, *, version: int = 1, path: str = "", align: int = 4) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    if kind == SOURCE:
        raw = path.encode()[:PATH_BYTES - 1]
        body = raw + b"\0" * (PATH_BYTES - len(raw)) + body
    padding = (-len(body)) % align
    return HEADER.pack(len(body) + padding, kind, padding, version, MAGIC) + body + b"\0" * padding


def write_blocks(blocks) -> bytes:
    return b"".join(blocks)
