#!/usr/bin/python3
"""Print the shapes that onnx's own (Python) shape inference gives every tensor of a model.

Usage: /usr/bin/python3 tools/onnx-shapes.py MODEL.onnx [NAME=VALUE ...]

Symbolic input dimensions take the given values (default 1), as `nnxr inspect --dim` does.
Output: one line per tensor, "name<TAB>dtype<TAB>d0,d1,..." with "?" for an unknown dim and
"-" for an unknown rank. Used by tests/test_shared_models.cpp as an independent reference.
"""
import sys

import onnx
from onnx import shape_inference

TYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
         8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
         14: "complex64", 15: "complex128", 16: "bfloat16"}


def main():
    model = onnx.load(sys.argv[1])
    dims = dict(a.split("=", 1) for a in sys.argv[2:])
    inits = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        for d in inp.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_value = int(dims.get(d.dim_param, 1))
    inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    g = inferred.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        shape = "-"
        if tt.HasField("shape"):
            shape = ",".join(str(d.dim_value) if d.HasField("dim_value") else "?" for d in tt.shape.dim)
        print(f"{vi.name}\t{TYPES.get(tt.elem_type, 'undefined')}\t{shape}")


if __name__ == "__main__":
    main()
