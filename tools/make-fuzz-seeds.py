#!/usr/bin/python3
"""Write the seed corpus for tests/fuzz/load_fuzzer: small ONNX models that reach the loader's
branches (attributes of every kind, constants, symbolic dims, legacy and unknown ops, custom
domains, external data, unsorted nodes). Usage: /usr/bin/python3 tools/make-fuzz-seeds.py"""
import os

import onnx
from onnx import helper as h, TensorProto as T

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")


def model(name, nodes, inputs, outputs, inits=(), opsets=(("", 13),), ir=8):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets], producer_name="seed")
    m.ir_version = ir
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def vi(name, shape, t=T.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def main():
    os.makedirs(OUT, exist_ok=True)
    model("relu", [h.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])])
    w = h.make_tensor("w", T.FLOAT, [4, 1, 3, 3], [0.1] * 36)
    b = h.make_tensor("b", T.FLOAT, [4], [0.0] * 4)
    model("conv", [h.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
                   h.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                   h.make_node("Flatten", ["p"], ["y"])],
          [vi("x", ["N", 1, 8, 8])], [vi("y", None)], [w, b])
    shape = h.make_tensor("s", T.INT64, [2], [1, -1])
    model("reshape_const", [h.make_node("Constant", [], ["k"], value=h.make_tensor("kv", T.FLOAT, [2], [1, 2])),
                            h.make_node("Reshape", ["x", "s"], ["r"]),
                            h.make_node("Add", ["r", "k"], ["y"])],
          [vi("x", [1, 2])], [vi("y", [1, 2])], [shape])
    model("unsorted", [h.make_node("Relu", ["a"], ["y"]), h.make_node("Neg", ["x"], ["a"])],
          [vi("x", [3])], [vi("y", [3])])
    model("legacy", [h.make_node("ImageScaler", ["x"], ["s"], scale=0.5, bias=[1.0, 2.0, 3.0]),
                     h.make_node("Crop", ["s"], ["y"], border=[1, 1, 1, 1])],
          [vi("x", [1, 3, 6, 6])], [vi("y", None)], opsets=(("", 7),), ir=3)
    model("custom", [h.make_node("Magic", ["x"], ["m"], domain="com.example", level=3),
                     h.make_node("Softmax", ["m"], ["y"], axis=-1)],
          [vi("x", [2, 5])], [vi("y", None)], opsets=(("", 13), ("com.example", 1)))
    model("unknown_op", [h.make_node("NoSuchOp", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)])
    ext = h.make_tensor("e", T.FLOAT, [4], [0.0] * 4)
    ext.ClearField("float_data")
    ext.data_location = T.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        ext.external_data.add(key=k, value=v)
    model("external", [h.make_node("Add", ["x", "e"], ["y"])], [vi("x", [4])], [vi("y", [4])], [ext])
    model("gather_slice", [h.make_node("Shape", ["x"], ["sh"]),
                           h.make_node("Gather", ["sh", "i"], ["g"], axis=0),
                           h.make_node("Slice", ["x", "st", "en"], ["y"])],
          [vi("x", ["B", 6])], [vi("y", None), vi("g", None)],
          [h.make_tensor("i", T.INT64, [], [1]), h.make_tensor("st", T.INT64, [1], [1]),
           h.make_tensor("en", T.INT64, [1], [4])])
    print("seeds written to", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
