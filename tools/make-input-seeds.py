#!/usr/bin/env python3
"""Write the seed corpus for tests/fuzz/input_fuzzer (the .npy, .pb and image readers) into
tests/fuzz/inputs: small .npy files (versions 1 and 2, several dtypes), TensorProto .pb files,
PNGs (grey, RGB, RGBA, palette, 16-bit, interlaced) written by hand with zlib, and the formats the
image reader refuses (16-bit PGM, Radiance HDR with an RLE scanline cut at the end, GIF, BMP).
The JPEG seeds (gray8x8.jpg, rgb16x12.jpg, rgb9x7-progressive.jpg) were written once with
libjpeg-turbo's compressor and are kept as they are.
Usage: /usr/bin/python3 tools/make-input-seeds.py"""
import os
import struct
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "inputs")


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def png(width, height, bit_depth, color_type, rows, interlace=0, extra=b""):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\x00" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def main():
    os.makedirs(OUT, exist_ok=True)
    # .npy
    for name, arr in (("f32_2x3.npy", np.arange(6, dtype=np.float32).reshape(2, 3)),
                      ("i64_scalar.npy", np.array(7, dtype=np.int64)),
                      ("bool_4.npy", np.array([True, False, True, True])),
                      ("f16_1x1x2x2.npy", np.ones((1, 1, 2, 2), dtype=np.float16))):
        np.save(os.path.join(OUT, name), arr)
    hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
    hdr += b" " * ((64 - (12 + len(hdr) + 1) % 64) % 64) + b"\n"
    write("v2_f32_3.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", len(hdr)) + hdr + np.ones(3, np.float32).tobytes())
    # .pb
    for name, arr in (("f32_2x2.pb", np.array([[1, 2], [3, 4]], dtype=np.float32)),
                      ("i32_3.pb", np.array([1, -2, 3], dtype=np.int32)),
                      ("u8_2.pb", np.array([0, 255], dtype=np.uint8))):
        write(name, numpy_helper.from_array(arr, name="t").SerializeToString())
    t = onnx.helper.make_tensor("raw", onnx.TensorProto.FLOAT, [2], np.array([1, 2], np.float32).tobytes(), raw=True)
    write("f32_raw.pb", t.SerializeToString())
    # PNG
    write("gray8_8x8.png", png(8, 8, 8, 0, [bytes((x * 32 + y) & 255 for x in range(8)) for y in range(8)]))
    write("gray16_4x4.png", png(4, 4, 16, 0, [b"".join(struct.pack(">H", (x + y) * 8000) for x in range(4)) for y in range(4)]))
    write("rgb8_5x3.png", png(5, 3, 8, 2, [bytes((x * 50 + c * 20 + y) & 255 for x in range(5) for c in range(3)) for y in range(3)]))
    write("rgba16_2x2.png", png(2, 2, 16, 6, [b"\x12\x34" * 8 for _ in range(2)]))
    plte = struct.pack(">I", 6) + b"PLTE" + b"\xff\x00\x00\x00\xff\x00"
    plte += struct.pack(">I", zlib.crc32(b"PLTE\xff\x00\x00\x00\xff\x00") & 0xFFFFFFFF)
    write("palette1_8x2.png", png(8, 2, 1, 3, [b"\xa5", b"\x5a"], extra=plte))
    write("gray2_interlaced_7x7.png", png(7, 7, 2, 0, [b"\x1b\x1b"] * 7, interlace=1))
    # Refused by content.
    write("gray16_4x4.pgm", b"P5\n4 4\n65535\n" + b"\xff\x00" * 16)
    write("rle_cut.hdr", b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 16\n\x02\x02\x00\x10\x85")
    write("tiny.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")
    write("tiny.bmp", b"BM" + b"\x00" * 60)
    print("seeds written to", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
