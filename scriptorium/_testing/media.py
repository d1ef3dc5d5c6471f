"""Small media files made in code, for tests and examples: no image or PDF library needed.

``png`` and ``pdf`` make complete files a viewer opens (a PNG of solid colour or of black-on-white
text in a 5x7 pixel font; a PDF whose pages show lines of text). ``gif``, ``jpeg`` and ``webp`` make
files whose headers are right (magic bytes, dimensions) with a token body: enough for everything
scriptorium reads, which is the header.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

__all__ = ["gif", "jpeg", "pdf", "png", "png_text", "webp"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _png_rows(width: int, height: int, rows: Sequence[bytes]) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    raw = b"".join(b"\x00" + row for row in rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def png(width: int = 2, height: int = 2, *, shade: int = 0x80) -> bytes:
    """A valid greyscale PNG of one shade."""
    row = bytes([shade]) * width
    return _png_rows(width, height, [row] * height)


# A 5x7 font for what an invoice needs; each glyph is seven rows of five bits.
_FONT = {
    " ": [0, 0, 0, 0, 0, 0, 0],
    "#": [10, 31, 10, 10, 31, 10, 0],
    "$": [4, 15, 20, 14, 5, 30, 4],
    "-": [0, 0, 0, 31, 0, 0, 0],
    ",": [0, 0, 0, 0, 12, 4, 8],
    ".": [0, 0, 0, 0, 0, 12, 12],
    ":": [0, 12, 12, 0, 12, 12, 0],
    "/": [1, 2, 2, 4, 8, 8, 16],
    "0": [14, 17, 19, 21, 25, 17, 14],
    "1": [4, 12, 4, 4, 4, 4, 14],
    "2": [14, 17, 1, 2, 4, 8, 31],
    "3": [31, 2, 4, 2, 1, 17, 14],
    "4": [2, 6, 10, 18, 31, 2, 2],
    "5": [31, 16, 30, 1, 1, 17, 14],
    "6": [6, 8, 16, 30, 17, 17, 14],
    "7": [31, 1, 2, 4, 8, 8, 8],
    "8": [14, 17, 17, 14, 17, 17, 14],
    "9": [14, 17, 17, 15, 1, 2, 12],
    "A": [14, 17, 17, 31, 17, 17, 17],
    "B": [30, 17, 17, 30, 17, 17, 30],
    "C": [14, 17, 16, 16, 16, 17, 14],
    "D": [28, 18, 17, 17, 17, 18, 28],
    "E": [31, 16, 16, 30, 16, 16, 31],
    "F": [31, 16, 16, 30, 16, 16, 16],
    "G": [14, 17, 16, 23, 17, 17, 15],
    "H": [17, 17, 17, 31, 17, 17, 17],
    "I": [14, 4, 4, 4, 4, 4, 14],
    "J": [7, 2, 2, 2, 2, 18, 12],
    "K": [17, 18, 20, 24, 20, 18, 17],
    "L": [16, 16, 16, 16, 16, 16, 31],
    "M": [17, 27, 21, 21, 17, 17, 17],
    "N": [17, 17, 25, 21, 19, 17, 17],
    "O": [14, 17, 17, 17, 17, 17, 14],
    "P": [30, 17, 17, 30, 16, 16, 16],
    "Q": [14, 17, 17, 17, 21, 18, 13],
    "R": [30, 17, 17, 30, 20, 18, 17],
    "S": [15, 16, 16, 14, 1, 1, 30],
    "T": [31, 4, 4, 4, 4, 4, 4],
    "U": [17, 17, 17, 17, 17, 17, 14],
    "V": [17, 17, 17, 17, 17, 10, 4],
    "W": [17, 17, 17, 21, 21, 21, 10],
    "X": [17, 17, 10, 4, 10, 17, 17],
    "Y": [17, 17, 10, 4, 4, 4, 4],
    "Z": [31, 1, 2, 4, 8, 16, 31],
}


def png_text(lines: Sequence[str], *, scale: int = 3, margin: int = 4) -> bytes:
    """A valid PNG showing ``lines`` (upper-cased; letters, digits and ``#$-.:/``) in black on
    white, each font pixel ``scale`` pixels wide."""
    lines = [line.upper() for line in lines]
    columns = max((len(line) for line in lines), default=0)
    width = (columns * 6 + 2 * margin) * scale
    height = (len(lines) * 9 + 2 * margin) * scale
    grid = [[0xFF] * width for _ in range(height)]
    for number, line in enumerate(lines):
        for position, char in enumerate(line):
            glyph = _FONT.get(char, _FONT[" "])
            for gy, bits in enumerate(glyph):
                for gx in range(5):
                    if bits & (1 << (4 - gx)):
                        top = (margin + number * 9 + gy) * scale
                        left = (margin + position * 6 + gx) * scale
                        for y in range(top, top + scale):
                            for x in range(left, left + scale):
                                grid[y][x] = 0
    return _png_rows(width, height, [bytes(row) for row in grid])


def gif(width: int = 2, height: int = 2) -> bytes:
    """A GIF89a header with the logical screen size, one image descriptor and a trailer."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + image + b"\x3b"


def jpeg(width: int = 2, height: int = 2) -> bytes:
    """SOI, a JFIF APP0 segment, a baseline SOF0 with the size, EOI."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp(width: int = 2, height: int = 2, *, form: str = "VP8X") -> bytes:
    """A RIFF/WEBP container whose first chunk (``VP8X``, ``VP8L`` or ``VP8 ``) gives the size."""
    if form == "VP8X":
        body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
        body += (height - 1).to_bytes(3, "little")
    elif form == "VP8L":
        bits = (width - 1) | ((height - 1) << 14)
        body = b"\x2f" + bits.to_bytes(4, "little") + b"\x00"
    elif form == "VP8 ":
        body = b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00\x00"
    else:
        raise ValueError(f"unknown WebP form {form!r}")
    chunk = form.encode("ascii") + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(pages: Sequence[Sequence[str]] | int = 1, *, padding: int = 0) -> bytes:
    """A valid PDF: one page per entry of ``pages`` showing its lines in Helvetica (an int makes
    that many pages saying their number). ``padding`` adds that many bytes in a comment-only
    stream, for size tests."""
    if isinstance(pages, int):
        pages = [[f"Page {n + 1}"] for n in range(pages)]
    objects: list[bytes] = []
    count = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for lines in pages:
        number = len(objects) + 1
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
            f"<< /F1 3 0 R >> >> /Contents {number + 1} 0 R >>".encode()
        )
        commands = ["BT", "/F1 14 Tf", "72 720 Td", "18 TL"]
        commands.extend(f"({_pdf_text(line)}) Tj T*" for line in lines)
        commands.append("ET")
        stream = "\n".join(commands).encode("latin-1")
        objects.append(
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
        )
    if padding:
        filler = b"%" + b"0" * (padding - 1)
        objects.append(
            b"<< /Length " + str(len(filler)).encode() + b" >>\nstream\n" + filler + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)
