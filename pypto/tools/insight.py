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
import struct

import attrs

HEADER = struct.Struct("<QBBBB")
MAGIC = 0x5A
SOURCE, TRACE, API_FILE, API_INSTR = 1, 2, 3, 4
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
        try:
            return json.loads(self.payload.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InsightFormatError(f"block of type {self.type} does not hold JSON: {exc}") from None


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
