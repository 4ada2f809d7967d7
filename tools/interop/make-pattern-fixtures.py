#!/usr/bin/python3
"""Writes the ONNX pattern fixtures of brain's import tests with ONNX's own helper (onnx.helper, Debian's
python3-onnx): the graphs PyTorch's exporters (legacy and dynamo) and tf2onnx write for a multilayer perceptron,
each with reference outputs computed here by a small numpy interpreter in float64, and graphs brain must refuse.

Usage: /usr/bin/python3 tools/interop/make-pattern-fixtures.py [OUT_DIR]   (default tests/data/interop/patterns)

Writes OUT_DIR/<name>.onnx for every fixture, and OUT_DIR/<name>.json for those brain imports:
{"input_shape": [features...], "inputs": [[...], ...] (rows flattened), "outputs": [[...], ...]} (float32
values). The files are deterministic.
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.RandomState(20261201)
SQRT2 = math.sqrt(2.0)


def weights(rows, cols, scale=0.6):
    return (RNG.standard_normal((rows, cols)) * scale).astype(np.float32)


def vector(n, scale=0.3):
    return (RNG.standard_normal(n) * scale).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def const_node(name, array):
    return helper.make_node("Constant", [], [name], name=name + "/Constant", value=init(name, array))


def scalar(name, value, dtype=np.float32):
    return init(name, np.array(value, dtype=dtype))


def model(nodes, inits, inputs, outputs, opset=17, metadata=None, ir_version=8):
    graph = helper.make_graph(nodes, "pattern", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="pattern-fixtures")
    m.ir_version = ir_version
    for key, value in (metadata or {}).items():
        entry = m.metadata_props.add()
        entry.key, entry.value = key, value
    return m


def io(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


# --- a float64 reference interpreter for the operators the fixtures use ------------------------------------------

def erf(x):
    return np.vectorize(math.erf)(x)


def run(m, x):
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    values[m.graph.input[0].name] = x.astype(np.float64)
    opset = m.opset_import[0].version
    for n in m.graph.node:
        a = {attr.name: helper.get_attribute_value(attr) for attr in n.attribute}
        i = [values[name] if name else None for name in n.input]
        op = n.op_type
        if op == "Constant":
            out = numpy_helper.to_array(a["value"]).astype(np.float64)
        elif op == "Gemm":
            A = i[0].T if a.get("transA", 0) else i[0]
            B = i[1].T if a.get("transB", 0) else i[1]
            out = a.get("alpha", 1.0) * (A @ B)
            if len(i) > 2 and i[2] is not None:
                out = out + a.get("beta", 1.0) * i[2]
        elif op == "MatMul":
            out = i[0] @ i[1]
        elif op in ("Add", "Sub", "Mul", "Div"):
            out = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op](i[0], i[1])
        elif op == "Erf":
            out = erf(i[0])
        elif op == "Relu":
            out = np.maximum(i[0], 0.0)
        elif op == "LeakyRelu":
            out = np.where(i[0] >= 0, i[0], a.get("alpha", 0.01) * i[0])
        elif op == "Sigmoid":
            out = 1.0 / (1.0 + np.exp(-i[0]))
        elif op == "Tanh":
            out = np.tanh(i[0])
        elif op == "Gelu":
            out = 0.5 * i[0] * (1.0 + erf(i[0] / SQRT2))
        elif op == "Softmax":
            axis = a.get("axis", -1 if opset >= 13 else 1)
            e = np.exp(i[0] - i[0].max(axis=axis, keepdims=True))
            out = e / e.sum(axis=axis, keepdims=True)
        elif op in ("Identity", "Dropout", "Cast"):
            out = i[0]
        elif op == "Flatten":
            out = i[0].reshape(i[0].shape[0], -1)
        elif op == "Reshape":
            shape = [int(d) for d in i[1]]
            shape = [x_dim if d == 0 else d for d, x_dim in zip(shape, i[0].shape)] if 0 in shape else shape
            out = i[0].reshape(shape)
        elif op == "Transpose":
            out = i[0].T
        else:
            raise ValueError("no reference for " + op)
        values[n.output[0]] = out
    return values[m.graph.output[0].name].astype(np.float32)


# --- the fixtures brain imports ------------------------------------------------------------------------------------

def torch_legacy_relu_sigmoid():
    """torch.onnx.export(dynamo=False) of nn.Sequential(Linear(5, 8), ReLU(), Linear(8, 1), Sigmoid())."""
    nodes = [helper.make_node("Gemm", ["input", "0.weight", "0.bias"], ["/0/Gemm_output_0"], name="/0/Gemm",
                              alpha=1.0, beta=1.0, transB=1),
             helper.make_node("Relu", ["/0/Gemm_output_0"], ["/1/Relu_output_0"], name="/1/Relu"),
             helper.make_node("Gemm", ["/1/Relu_output_0", "2.weight", "2.bias"], ["/2/Gemm_output_0"],
                              name="/2/Gemm", alpha=1.0, beta=1.0, transB=1),
             helper.make_node("Sigmoid", ["/2/Gemm_output_0"], ["output"], name="/3/Sigmoid")]
    inits = [init("0.weight", weights(8, 5)), init("0.bias", vector(8)), init("2.weight", weights(1, 8)),
             init("2.bias", vector(1))]
    return model(nodes, inits, [io("input", ["batch_size", 5])], [io("output", ["batch_size", 1])]), 5


def keras_gemm_alpha_beta_tanh():
    """Gemm with transB=0 (weights inputs x outputs, as Keras keeps them), alpha, beta and a [1, n] bias."""
    nodes = [helper.make_node("Gemm", ["x", "W0", "b0"], ["h"], name="dense", alpha=0.5, beta=2.0, transB=0),
             helper.make_node("Tanh", ["h"], ["t"], name="dense/Tanh"),
             helper.make_node("Gemm", ["t", "W1"], ["y"], name="dense_1", transB=0)]
    inits = [init("W0", weights(4, 6)), init("b0", vector(6).reshape(1, 6)), init("W1", weights(6, 3))]
    return model(nodes, inits, [io("x", [None, 4])], [io("y", [None, 3])], opset=13), 4


def tf2onnx_matmul_add_softmax():
    """tf2onnx of a Keras Dense stack: Constant nodes, MatMul then Add (bias first), Softmax on the last axis."""
    nodes = [const_node("W0", weights(3, 7)), const_node("b0", vector(7)), const_node("W1", weights(7, 4)),
             const_node("b1", vector(4)),
             helper.make_node("MatMul", ["dense_input", "W0"], ["mm0"], name="sequential/dense/MatMul"),
             helper.make_node("Add", ["b0", "mm0"], ["add0"], name="sequential/dense/BiasAdd"),
             helper.make_node("Relu", ["add0"], ["relu0"], name="sequential/dense/Relu"),
             helper.make_node("MatMul", ["relu0", "W1"], ["mm1"], name="sequential/dense_1/MatMul"),
             helper.make_node("Add", ["mm1", "b1"], ["add1"], name="sequential/dense_1/BiasAdd"),
             helper.make_node("Softmax", ["add1"], ["dense_1"], name="sequential/dense_1/Softmax", axis=-1)]
    return model(nodes, [], [io("dense_input", ["unk__6", 3])], [io("dense_1", ["unk__7", 4])], opset=13), 3


def gelu_legacy():
    """PyTorch's legacy GELU: Div(x, sqrt 2), Erf, Add 1, Mul(x, .), Mul(., 0.5)."""
    nodes = [helper.make_node("Gemm", ["input", "0.weight", "0.bias"], ["z"], name="/0/Gemm", transB=1),
             helper.make_node("Div", ["z", "sqrt2"], ["d"], name="/1/Div"),
             helper.make_node("Erf", ["d"], ["e"], name="/1/Erf"),
             helper.make_node("Add", ["e", "one"], ["s"], name="/1/Add"),
             helper.make_node("Mul", ["z", "s"], ["m"], name="/1/Mul"),
             helper.make_node("Mul", ["m", "half"], ["g"], name="/1/Mul_1"),
             helper.make_node("Gemm", ["g", "2.weight", "2.bias"], ["output"], name="/2/Gemm", transB=1)]
    inits = [init("0.weight", weights(10, 4)), init("0.bias", vector(10)), scalar("sqrt2", SQRT2),
             scalar("one", 1.0), scalar("half", 0.5), init("2.weight", weights(2, 10)), init("2.bias", vector(2))]
    return model(nodes, inits, [io("input", ["batch", 4])], [io("output", ["batch", 2])]), 4


def gelu_onnxscript():
    """onnxscript's GELU (PyTorch's dynamo exporter): Div, Erf, Add, Mul(0.5, .), Mul(x, .); MatMul + Add layers."""
    nodes = [helper.make_node("Transpose", ["0.weight"], ["wt0"], name="node_Transpose_0", perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt0"], ["mm0"], name="node_MatMul_1"),
             helper.make_node("Add", ["mm0", "0.bias"], ["z"], name="node_Add_2"),
             helper.make_node("Div", ["z", "c_sqrt2"], ["d"], name="node_Div_3"),
             helper.make_node("Erf", ["d"], ["e"], name="node_Erf_4"),
             helper.make_node("Add", ["e", "c_one"], ["s"], name="node_Add_5"),
             helper.make_node("Mul", ["c_half", "s"], ["hs"], name="node_Mul_6"),
             helper.make_node("Mul", ["z", "hs"], ["g"], name="node_Mul_7"),
             helper.make_node("Gemm", ["g", "2.weight", "2.bias"], ["linear_1"], name="node_linear_1", transB=1)]
    inits = [init("0.weight", weights(9, 3)), init("0.bias", vector(9)), scalar("c_sqrt2", SQRT2),
             scalar("c_one", 1.0), scalar("c_half", 0.5), init("2.weight", weights(3, 9)), init("2.bias", vector(3))]
    return model(nodes, inits, [io("x", ["s0", 3])], [io("linear_1", ["s0", 3])], opset=18, ir_version=8), 3


def gelu_keras():
    """tf2onnx of Keras's exact GELU: Mul(x, 1/sqrt 2), Erf, Add(1, .), Mul(x, 0.5), Mul(., s)."""
    nodes = [helper.make_node("MatMul", ["in", "W0"], ["mm"], name="dense/MatMul"),
             helper.make_node("Add", ["mm", "b0"], ["z"], name="dense/BiasAdd"),
             helper.make_node("Mul", ["z", "rsqrt2"], ["d"], name="dense/Gelu/truediv"),
             helper.make_node("Erf", ["d"], ["e"], name="dense/Gelu/Erf"),
             helper.make_node("Add", ["one", "e"], ["s"], name="dense/Gelu/add"),
             helper.make_node("Mul", ["z", "half"], ["hz"], name="dense/Gelu/mul"),
             helper.make_node("Mul", ["hz", "s"], ["g"], name="dense/Gelu/mul_1"),
             helper.make_node("MatMul", ["g", "W1"], ["mm1"], name="dense_1/MatMul"),
             helper.make_node("Add", ["mm1", "b1"], ["y"], name="dense_1/BiasAdd"),
             helper.make_node("Sigmoid", ["y"], ["out"], name="dense_1/Sigmoid")]
    inits = [init("W0", weights(6, 5)), init("b0", vector(5)), scalar("rsqrt2", 1.0 / SQRT2), scalar("one", 1.0),
             scalar("half", 0.5), init("W1", weights(5, 1)), init("b1", vector(1))]
    return model(nodes, inits, [io("in", [None, 6])], [io("out", [None, 1])], opset=15), 6


def gelu_operator():
    """The Gelu operator of opset 20 (PyTorch's dynamo exporter at opset >= 20)."""
    nodes = [helper.make_node("Gemm", ["x", "0.weight", "0.bias"], ["z"], name="node_linear", transB=1),
             helper.make_node("Gelu", ["z"], ["g"], name="node_gelu", approximate="none"),
             helper.make_node("Gemm", ["g", "2.weight", "2.bias"], ["y"], name="node_linear_1", transB=1)]
    inits = [init("0.weight", weights(6, 3)), init("0.bias", vector(6)), init("2.weight", weights(2, 6)),
             init("2.bias", vector(2))]
    return model(nodes, inits, [io("x", ["batch", 3])], [io("y", ["batch", 2])], opset=20, ir_version=9), 3


def passthrough_leaky_softmax():
    """Flatten, Dropout (inference), Identity, LeakyRelu(0.01), Softmax(axis=1) at opset 11 (its default axis)."""
    nodes = [helper.make_node("Flatten", ["input"], ["f"], name="/0/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "1.weight", "1.bias"], ["z"], name="/1/Gemm", transB=1),
             helper.make_node("LeakyRelu", ["z"], ["l"], name="/2/LeakyRelu", alpha=0.01),
             helper.make_node("Dropout", ["l"], ["dr"], name="/3/Dropout"),
             helper.make_node("Identity", ["dr"], ["id"], name="/4/Identity"),
             helper.make_node("Gemm", ["id", "5.weight", "5.bias"], ["z2"], name="/5/Gemm", transB=1),
             helper.make_node("Softmax", ["z2"], ["output"], name="/6/Softmax", axis=1)]
    inits = [init("1.weight", weights(12, 5)), init("1.bias", vector(12)), init("5.weight", weights(3, 12)),
             init("5.bias", vector(3))]
    # IR version 6 with the initializers listed among the graph's inputs (keep_initializers_as_inputs=True).
    listed = [io(t.name, list(t.dims)) for t in inits]
    return model(nodes, inits, [io("input", ["N", 5])] + listed, [io("output", ["N", 3])], opset=11,
                 ir_version=6), 5


def rank3_flatten():
    """An input of [batch, 2, 3] flattened (nn.Flatten) before the first layer: brain takes 6 features."""
    nodes = [helper.make_node("Flatten", ["input"], ["f"], name="/0/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "1.weight", "1.bias"], ["z"], name="/1/Gemm", transB=1),
             helper.make_node("Tanh", ["z"], ["output"], name="/2/Tanh")]
    inits = [init("1.weight", weights(4, 6)), init("1.bias", vector(4))]
    return model(nodes, inits, [io("input", ["batch", 2, 3])], [io("output", ["batch", 4])]), (2, 3)


def casts_and_reshape():
    """Weights stored as float16 and float64 cast to float, a Reshape that keeps rows, a MatMul without bias."""
    w0 = weights(4, 5).astype(np.float16)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("Cast", ["w0_half"], ["w0"], name="cast_w0", to=TensorProto.FLOAT),
             helper.make_node("Cast", ["b0_double"], ["b0"], name="cast_b0", to=TensorProto.FLOAT),
             helper.make_node("Gemm", ["r", "w0", "b0"], ["z"], name="gemm", transB=1),
             helper.make_node("Relu", ["z"], ["h"], name="relu"),
             helper.make_node("MatMul", ["h", "w1"], ["y"], name="matmul")]
    inits = [init("shape", np.array([0, -1], dtype=np.int64)), init("w0_half", w0),
             init("b0_double", vector(4).astype(np.float64)), init("w1", weights(4, 2))]
    return model(nodes, inits, [io("x", ["batch", 5])], [io("y", ["batch", 2])]), 5


def standardized_with_names():
    """brain's own form: Sub(mean), Div(stddev) before the first layer, names in the metadata."""
    nodes = [helper.make_node("Sub", ["input", "mean"], ["c"], name="/standardize/Sub"),
             helper.make_node("Div", ["c", "stddev"], ["s"], name="/standardize/Div"),
             helper.make_node("Gemm", ["s", "0.weight", "0.bias"], ["z"], name="/0/Gemm", transB=1),
             helper.make_node("Sigmoid", ["z"], ["output"], name="/1/Sigmoid")]
    inits = [init("mean", np.array([10.0, -2.0, 0.5], np.float32)),
             init("stddev", np.array([4.0, 0.25, 1.5], np.float32)), init("0.weight", weights(2, 3)),
             init("0.bias", vector(2))]
    meta = {"feature_names": json.dumps(["length", "width", "depth"]), "class_labels": json.dumps(["cat", "dog"]),
            "target_names": json.dumps(["p_cat", "p_dog"])}
    return model(nodes, inits, [io("input", ["batch", 3])], [io("output", ["batch", 2])], metadata=meta), 3


def dropout_training_mode_false():
    """Dropout with its optional inputs: ratio and training_mode (BOOL false) as an initializer (raw data, the mask
    output named but unused), then as a Constant node (the flag in int32_data) with no ratio."""
    mode_const = helper.make_node("Constant", [], ["mode_c"], name="mode_c/Constant",
                                  value=helper.make_tensor("mode_c", TensorProto.BOOL, [], [False]))
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["z"], name="fc0", transB=1),
             helper.make_node("Relu", ["z"], ["h"], name="relu"),
             helper.make_node("Dropout", ["h", "ratio", "mode"], ["d", "mask"], name="drop0"),
             helper.make_node("Gemm", ["d", "w1", "b1"], ["z2"], name="fc1", transB=1),
             mode_const,
             helper.make_node("Dropout", ["z2", "", "mode_c"], ["y"], name="drop1")]
    inits = [init("w0", weights(6, 4)), init("b0", vector(6)), init("w1", weights(2, 6)), init("b1", vector(2)),
             scalar("ratio", 0.5), init("mode", np.array(False))]
    return model(nodes, inits, [io("x", ["batch", 4])], [io("y", ["batch", 2])], opset=13), 4


def matmul_passthrough_add():
    """MatMul, then Identity, Dropout (inference) and a Reshape that keeps rows, then the bias Add; its own random
    numbers, so that the fixtures made before it keep their bytes."""
    rng = np.random.RandomState(20261205)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["p"], name="mm0"),
             helper.make_node("Identity", ["p"], ["p1"], name="id"),
             helper.make_node("Dropout", ["p1"], ["p2"], name="drop"),
             helper.make_node("Reshape", ["p2", "shape"], ["p3"], name="reshape"),
             helper.make_node("Add", ["p3", "b0"], ["z"], name="add0"),
             helper.make_node("Relu", ["z"], ["h"], name="relu"),
             helper.make_node("MatMul", ["h", "w1"], ["q"], name="mm1"),
             helper.make_node("Add", ["b1", "q"], ["y"], name="add1")]
    inits = [init("w0", (rng.standard_normal((4, 6)) * 0.6).astype(np.float32)),
             init("b0", (rng.standard_normal(6) * 0.3).astype(np.float32)),
             init("shape", np.array([-1, 6], dtype=np.int64)),
             init("w1", (rng.standard_normal((6, 3)) * 0.6).astype(np.float32)),
             init("b1", (rng.standard_normal((1, 3)) * 0.3).astype(np.float32))]
    return model(nodes, inits, [io("x", ["batch", 4])], [io("y", ["batch", 3])]), 4


GOOD = [torch_legacy_relu_sigmoid, keras_gemm_alpha_beta_tanh, tf2onnx_matmul_add_softmax, gelu_legacy,
        gelu_onnxscript, gelu_keras, gelu_operator, passthrough_leaky_softmax, rank3_flatten, casts_and_reshape,
        standardized_with_names, dropout_training_mode_false]
LATER_GOOD = [matmul_passthrough_add]


# --- graphs brain refuses ------------------------------------------------------------------------------------------

def simple(nodes, inits, inputs=None, opset=17):
    return model(nodes, inits, inputs or [io("x", ["batch", 3])], [io("y", ["batch", 2])], opset=opset)


def bad_fixtures():
    w, b = init("w", weights(2, 3)), init("b", vector(2))
    gemm = helper.make_node("Gemm", ["x", "w", "b"], ["z"], name="fc", transB=1)
    yield "bad_conv", simple([helper.make_node("Conv", ["x", "k"], ["y"], name="conv0")],
                             [init("k", weights(2, 3).reshape(2, 3, 1))])
    yield "bad_branch", simple([gemm, helper.make_node("Relu", ["z"], ["r"], name="relu"),
                                helper.make_node("Sigmoid", ["z"], ["s"], name="sig"),
                                helper.make_node("Add", ["r", "s"], ["y"], name="join")], [w, b])
    yield "bad_unsupported_op", simple([gemm, helper.make_node("Elu", ["z"], ["y"], name="elu")], [w, b])
    yield "bad_cycle", simple([helper.make_node("Gemm", ["x", "w", "b"], ["z"], name="fc", transB=1),
                               helper.make_node("Add", ["z", "t"], ["u"], name="loop_add"),
                               helper.make_node("Relu", ["u"], ["t"], name="loop_relu"),
                               helper.make_node("Identity", ["u"], ["y"], name="out")], [w, b])
    yield "bad_leaky_alpha", simple([gemm, helper.make_node("LeakyRelu", ["z"], ["y"], name="leaky", alpha=0.3)],
                                    [w, b])
    yield "bad_log_softmax", simple([gemm, helper.make_node("LogSoftmax", ["z"], ["y"], name="logsm", axis=-1)],
                                    [w, b])
    yield "bad_hidden_softmax", simple([gemm, helper.make_node("Softmax", ["z"], ["s"], name="sm"),
                                        helper.make_node("Gemm", ["s", "w2"], ["y"], name="fc2", transB=1)],
                                       [w, b, init("w2", weights(2, 2))])
    yield "bad_two_inputs", simple([helper.make_node("Gemm", ["x", "w", "b"], ["z"], name="fc", transB=1),
                                    helper.make_node("Add", ["z", "x2"], ["y"], name="add")], [w, b],
                                   inputs=[io("x", ["batch", 3]), io("x2", ["batch", 2])])
    yield "bad_weight_input", simple([helper.make_node("Abs", ["wt"], ["w_abs"], name="abs"),
                                      helper.make_node("MatMul", ["x", "w_abs"], ["y"], name="mm")],
                                     [init("wt", weights(3, 2))])
    yield "bad_gelu_tanh", simple([gemm, helper.make_node("Gelu", ["z"], ["y"], name="gelu", approximate="tanh")],
                                  [w, b], opset=20)
    yield "bad_softmax_axis", simple([gemm, helper.make_node("Softmax", ["z"], ["y"], name="sm", axis=0)], [w, b])
    yield "bad_dead_node", simple([gemm, helper.make_node("Abs", ["b"], ["unused"], name="stray"),
                                   helper.make_node("Sigmoid", ["z"], ["y"], name="sig")], [w, b])
    yield "bad_trans_a", simple([helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transA=1)],
                                [w, b])
    yield "bad_misspelt_attribute", simple([helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transb=1)],
                                           [w, b])
    yield "bad_repeated_attribute", repeated_attribute_model(w, b)
    yield "bad_repeated_metadata", repeated_metadata_model(w, b)
    yield "bad_external_data", external_data_model()
    yield "bad_dropout_training", simple([gemm, helper.make_node("Dropout", ["z", "", "on"], ["y"], name="drop")],
                                         [w, b, init("on", np.array(True))], opset=13)


def repeated_attribute_model(w, b):
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)
    node.attribute.append(helper.make_attribute("transB", 0))
    return simple([node], [w, b])


def repeated_metadata_model(w, b):
    m = simple([helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)], [w, b])
    for labels in ('["a", "b"]', '["b", "a"]'):
        entry = m.metadata_props.add()
        entry.key, entry.value = "class_labels", labels
    return m


def external_data_model():
    w = init("w", weights(2, 3))
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    entry = w.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    return simple([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)], [w])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "tests",
                                                            "data", "interop", "patterns")
    os.makedirs(out, exist_ok=True)
    for make in GOOD:
        m, features = make()
        name = make.__name__
        shape = (features,) if isinstance(features, int) else features
        x = RNG.uniform(-2.5, 2.5, size=(7,) + shape).astype(np.float32)
        if name == "standardized_with_names":
            x = (x * np.array([4.0, 0.25, 1.5], np.float32) + np.array([10.0, -2.0, 0.5], np.float32))
        x[0] = 0.0  # a row of zeros: every bias alone
        y = run(m, x)
        onnx.save(m, os.path.join(out, name + ".onnx"))
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump({"input_shape": list(shape), "inputs": x.reshape(len(x), -1).tolist(),
                       "outputs": y.tolist()}, f)
            f.write("\n")
    for name, m in bad_fixtures():
        onnx.save(m, os.path.join(out, name + ".onnx"))
    # Made after the others with their own random numbers, so that adding them changed no earlier fixture.
    for make in LATER_GOOD:
        m, features = make()
        x = np.random.RandomState(7).uniform(-2.5, 2.5, size=(7, features)).astype(np.float32)
        x[0] = 0.0
        onnx.save(m, os.path.join(out, make.__name__ + ".onnx"))
        with open(os.path.join(out, make.__name__ + ".json"), "w") as f:
            json.dump({"input_shape": [features], "inputs": x.tolist(), "outputs": run(m, x).tolist()}, f)
            f.write("\n")
    print("wrote", len(GOOD) + len(LATER_GOOD), "importable and", len(list(bad_fixtures())), "refused fixtures to",
          out)


if __name__ == "__main__":
    main()
