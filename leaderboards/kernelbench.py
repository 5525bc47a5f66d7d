"""KernelBench-format tasks as kernelcup problems (``kernelcup problems import-kernelbench``).

A KernelBench-style task is one Python file: a ``Model(nn.Module)`` whose ``forward`` is the computation,
``get_inputs()`` (the forward's arguments, drawn from PyTorch's global generator), ``get_init_inputs()`` (Model's
constructor arguments) and module-level shape constants (``batch_size = 16``) that both read. ``import_tasks`` turns
each file into a problem folder:

- ``reference.py`` carries the task's source (``TASK``), with each literal shape constant rewritten to read the case's
  value (``batch_size = __case__["batch_size"]``), so constants computed from them follow. For a case it builds
  ``Model(*get_init_inputs())`` under ``torch.manual_seed(seed)`` (the weights come from the seed) and draws
  ``get_inputs()`` under ``torch.manual_seed(seed + 2**31)``, both on the evaluator's device. The data a kernel gets is
  a dict: ``inputs`` (the forward's arguments), ``init_inputs`` and ``state_dict`` (the weights). The check recomputes
  the forward in float64 from the same data and allows an error set by the output's dtype (``TOLERANCE``).
- ``task.yml``: the task's own shapes as the benchmark, three smaller test cases (sizes above 32 divided by one power
  of two, so divisibility between them holds; batch sizes 1, 2 and 3), the description with the forward's source.
- ``templates/pytorch.py``: the task's code with ``class ModelNew(Model)`` (its parameters, so the weights load into
  it) and a ``custom_kernel(data)`` that builds ModelNew once and applies it with the case's weights
  (``torch.func.functional_call``). Competitors rewrite ``ModelNew.forward``.

Nothing here imports the task or PyTorch: the file is read with ``ast``. Whether the shapes of the test cases suit the
task is for ``kernelcup problems validate --run`` to say (it runs the reference on every one).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from leaderboards.problem_files import MAX_FILE_BYTES, FileRefused, read_text
from leaderboards.problem_rules import _BIDI_CONTROLS, CASE_KEY, MAX_TEXT_CHARS, problem_name_issue
from leaderboards.problems import FormatIssue, ProblemFormatError
from runners.contract import DataType

REQUIRED_FUNCTIONS = ("get_inputs", "get_init_inputs")
TEST_CAP = 32
"""Test cases divide every size above this by one power of two until the largest is at most this."""
RESERVED = frozenset({"seed", "__case__"})
"""Names a shape constant cannot have: the case's seed is generate_input's own parameter, and ``__case__`` holds the
case's values in the reference's namespace of the task."""
DESCRIPTION_SOURCE_MAX = 5000
"""The most characters of Model's source the description quotes (the description holds at most 8,192)."""
SUMMARY_MAX = 1000
"""The most characters of the task's docstring the description opens with (red team, 2026-11-29: a docstring of
8 KiB made a description that ``validate`` refused)."""
SHAPES_MAX = 500
"""The most characters of the shape constants the description lists."""

ConstValue = int | float | bool | str | list[Any]


@dataclass(frozen=True)
class KernelBenchTask:
    """One parsed KernelBench-style file."""

    path: Path
    name: str
    source: str
    constants: dict[str, ConstValue]
    """The literal module-level constants, in the file's order: the cases' keys (tuples as lists)."""
    tuples: frozenset[str]
    """The constants that were tuples (the reference gives them back as tuples)."""
    rewritten: str
    """The source with every constant reading its case value."""
    template_source: str
    """The source without get_inputs and get_init_inputs (the template's start)."""
    model_source: str
    summary: str
    dtype: DataType

    def benchmark(self, seed: int) -> dict[str, Any]:
        return {**self.constants, "seed": seed}

    def tests(self, seed: int) -> list[dict[str, Any]]:
        sizes = [v for v in _ints(list(self.constants.values())) if v > TEST_CAP]
        factor = 1
        while sizes and max(sizes) // factor > TEST_CAP:
            factor *= 2
        cases = []
        for i, (batch, div) in enumerate(((1, factor), (2, factor), (3, max(1, factor // 2)))):
            shrunk = {k: _shrink(k, v, div, batch) for k, v in self.constants.items()}
            cases.append({**shrunk, "seed": seed + i})
        return cases


def _ints(value: Any) -> list[int]:
    if isinstance(value, list):
        return [i for item in value for i in _ints(item)]
    return [value] if isinstance(value, int) and not isinstance(value, bool) else []


def _shrink(name: str, value: Any, factor: int, batch: int) -> Any:
    if isinstance(value, list):
        return [_shrink("", v, factor, batch) for v in value]
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if "batch" in name.lower() and value >= 1:
        return min(value, batch)
    return max(1, value // factor) if value > TEST_CAP else value


def problem_name(path: Path) -> str:
    """The problem's name from the file's: ASCII letters, digits, ``-`` and ``_`` (others become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", path.stem).strip("_-") or "task"
    return name[:100]


MAX_CONSTANT_BITS = 64
"""The widest integer a shape constant, or any step of the arithmetic that makes it, may be: a case's value is a
64-bit integer anyway, and bounding every step keeps the evaluation of ``9**64**64...`` instant (red team,
2026-11-29: a power tower hung the import)."""


class ConstantTooLarge(ValueError):
    """A constant's arithmetic reaches an integer wider than ``MAX_CONSTANT_BITS``: the task is refused (as a
    computed constant it would hang or fail the reference at every call instead)."""


def _literal(node: ast.expr) -> tuple[ConstValue, bool] | None:
    """The value of a literal constant (and whether it was a tuple), or None for anything computed. Raises
    ``ConstantTooLarge`` for arithmetic on integers wider than 64 bits."""
    try:
        value = _arithmetic(node)
    except ConstantTooLarge:
        raise
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ZeroDivisionError, OverflowError):
        return None

    def plain(v: Any) -> Any:
        if isinstance(v, tuple | list):
            items = [plain(x) for x in v]
            return None if any(x is None for x in items) else items
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            return None
        return v if isinstance(v, int | float | bool | str) else None

    out = plain(value)
    return None if out is None else (out, isinstance(value, tuple))


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_CONSTANT_BITS:
        raise ConstantTooLarge(f"an integer of {value.bit_length()} bits (at most {MAX_CONSTANT_BITS})")
    return value


def _power(a: Any, b: Any) -> Any:
    """``a ** b`` once its size is known to be bounded: for integers, bit_length(a) * b bits at most."""
    if abs(b) > 64:
        raise ConstantTooLarge(f"an exponent of {b} (at most 64)")
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and (abs(a).bit_length() - 1) * b >= 64:
        raise ConstantTooLarge(f"{a}**{b}, an integer of about {a.bit_length() * b} bits (at most {MAX_CONSTANT_BITS})")
    return a**b


def _shift(a: Any, b: Any) -> Any:
    if not isinstance(a, int) or not isinstance(b, int) or b < 0:
        raise ValueError("a shift of something other than integers")
    if a and a.bit_length() + b > MAX_CONSTANT_BITS:
        raise ConstantTooLarge(f"{a} << {b}, an integer of {a.bit_length() + b} bits (at most {MAX_CONSTANT_BITS})")
    return a << b


_OPERATORS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,  # operands of at most 64 bits: at most 128 before the check
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: _power,
    ast.LShift: _shift,
}


def _arithmetic(node: ast.expr) -> Any:
    """A literal (``ast.literal_eval``), or arithmetic on number literals such as ``1024 * 2`` or ``2**20``, which
    KernelBench's files write for sizes; a name or a call raises ``ValueError`` (the constant is computed). Every
    integer, literal or intermediate, is at most 64 bits wide (``ConstantTooLarge``), checked before a power or shift
    is computed, so no constant takes long to evaluate."""
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right)):
            raise ValueError("arithmetic on something other than numbers")
        return _bounded(_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _arithmetic(node.operand)
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise ValueError("a sign on something other than a number")
        return _bounded(-operand if isinstance(node.op, ast.USub) else operand)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_arithmetic(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    return _bounded(ast.literal_eval(node))


def _constant_targets(node: ast.stmt) -> list[tuple[str, ast.expr]]:
    """``NAME = literal`` and ``A, B = lit, lit`` at module level: each name with its value's node."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [(node.target.id, node.value)]
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target = node.targets[0]
    if isinstance(target, ast.Name):
        return [(target.id, node.value)]
    if (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(node.value, ast.Tuple | ast.List)
        and len(target.elts) == len(node.value.elts)
        and all(isinstance(t, ast.Name) for t in target.elts)
    ):
        return [(t.id, v) for t, v in zip(target.elts, node.value.elts, strict=True)]  # type: ignore[attr-defined]
    return []


def _replace(source: str, spans: list[tuple[int, int, str]]) -> str:
    """``source`` with each (start offset, end offset) replaced by its text, from the last one back."""
    for start, end, text in sorted(spans, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def _offsets(source: str) -> list[int]:
    starts, total = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    starts.append(total)
    return starts


def _dtype(source: str) -> DataType:
    """The data type the task computes in, as the file says it (fp32 unless it names fp16 or bf16)."""
    if re.search(r"\bbfloat16\b", source):
        return DataType.BF16
    if re.search(r"\bfloat16\b|\bhalf\b|\.half\(\)", source):
        return DataType.FP16
    return DataType.FP32


def parse_task(path: Path) -> KernelBenchTask:
    """Read one KernelBench-style file; ``ProblemFormatError`` names the file and each thing it lacks."""
    file = str(path)
    try:
        source = read_text(path, MAX_FILE_BYTES)
    except FileRefused as exc:
        raise ProblemFormatError([FormatIssue(file, "", f"cannot be read: {exc}")]) from None
    except ValueError as exc:
        raise ProblemFormatError([FormatIssue(file, "", str(exc))]) from None
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        raise ProblemFormatError([FormatIssue(file, f"line {exc.lineno}", f"syntax error: {exc.msg}")]) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProblemFormatError(
            [FormatIssue(file, "", f"cannot be parsed as Python ({type(exc).__name__})")]
        ) from None
    issues: list[FormatIssue] = []
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    model = classes.get("Model")
    expected = "a KernelBench task defines class Model(nn.Module) with forward(), get_inputs() and get_init_inputs()"
    if model is None:
        issues.append(FormatIssue(file, "Model", f"no class Model at module level ({expected})"))
    elif not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        issues.append(FormatIssue(file, "Model.forward", "class Model has no forward method"))
    for name in REQUIRED_FUNCTIONS:
        if name not in functions:
            issues.append(FormatIssue(file, name, f"no function {name}() at module level ({expected})"))
    constants: dict[str, ConstValue] = {}
    tuples: set[str] = set()
    offsets = _offsets(source)
    rewrites: list[tuple[int, int, str]] = []
    for node in tree.body:
        for name, value_node in _constant_targets(node):
            try:
                found = _literal(value_node)
            except ConstantTooLarge as exc:
                issues.append(FormatIssue(file, name, f"line {value_node.lineno}: the value reaches {exc}; a shape "
                                          "constant is a size: write one that fits in 64 bits"))  # fmt: skip
                continue
            if found is None:
                constants.pop(name, None)  # reassigned from something computed: it is no longer a case's key
                tuples.discard(name)
                continue
            if name in RESERVED or not CASE_KEY.fullmatch(name):
                issues.append(FormatIssue(file, name, f"a shape constant cannot be named {name!r}: rename it"))
                continue
            constants[name], is_tuple = found
            if is_tuple:
                tuples.add(name)
            start = offsets[value_node.lineno - 1] + value_node.col_offset
            end = offsets[(value_node.end_lineno or value_node.lineno) - 1] + (value_node.end_col_offset or 0)
            rewrites.append((start, end, f"__case__[{name!r}]"))
    if issues:
        raise ProblemFormatError(issues)
    assert model is not None
    drop = [
        (offsets[_first_line(n) - 1], offsets[n.end_lineno or n.lineno], "")
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name in REQUIRED_FUNCTIONS
    ]
    docstring = ast.get_docstring(model) or ast.get_docstring(tree) or ""
    return KernelBenchTask(
        path=path,
        name=problem_name(path),
        source=source,
        constants=constants,
        tuples=frozenset(tuples),
        rewritten=_replace(source, rewrites),
        template_source=_replace(source, drop).rstrip() + "\n",
        model_source=ast.get_source_segment(source, model) or "",
        summary=" ".join(docstring.split()),
        dtype=_dtype(source),
    )


def _first_line(node: ast.FunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


# -- the files of a problem --------------------------------------------------------------------------------------

REFERENCE = '''"""{name}: imported from the KernelBench-style task {file} by `kernelcup problems import-kernelbench`.

TASK is the task's code, unchanged but for its literal shape constants, which read the case's values
(``__case__``), so tests can run smaller shapes than the benchmark. For a case the data a kernel gets is a dict:

    data["inputs"]       the tuple get_inputs() made under torch.manual_seed(seed + 2**31)
    data["init_inputs"]  the tuple get_init_inputs() gave: Model's constructor arguments
    data["state_dict"]   the weights of Model(*init_inputs) built under torch.manual_seed(seed)

all on the evaluator's device; the answer is Model.forward(*inputs) with those weights.
"""

from __future__ import annotations

from typing import Any

import torch
from _lib import compare, device

TASK = {task}

SHAPES = {shapes!r}
"""The task's own shape constants (its benchmark); the cases give their own values."""
TUPLES = frozenset({tuples!r})
"""The constants the task wrote as tuples (YAML cases hold lists)."""

# The allowed error, by the output's dtype: |out - expected| <= tol * (rms(expected) + |expected|), where expected is
# the forward computed in float64 from the same inputs and weights (float32 where an operation has no float64 kernel).
# Measured on fp32 matmuls (32x16x24 to 128x1024x512, standard-normal inputs): TF32 or fp16 inputs with fp32 sums err
# by at most 1.2e-3 of that scale, any order of summation by far less, bf16 inputs by 8e-3 to 1e-2, and a kernel that
# drops an operation (a bias, an activation, a scale) by a large fraction of it. So fp32 allows 5e-3 (TF32 passes,
# bf16 does not; KernelBench's own 1e-2 lets bf16 through). fp16 and bf16 outputs round to 2**-11 and 2**-8 at every
# layer of the reference itself: 1e-2 and 3e-2. Integer and bool outputs (argmax, masks) must be exact, against the
# reference computed in its own precision.
TOLERANCE = {{torch.float32: 5e-3, torch.float16: 1e-2, torch.bfloat16: 3e-2, torch.float64: 1e-6}}


def _task(case: dict[str, Any]) -> dict[str, Any]:
    """The task's namespace with the case's shapes."""
    values = {{k: tuple(v) if k in TUPLES and isinstance(v, list) else v for k, v in case.items()}}
    namespace: dict[str, Any] = {{"__name__": "kernelbench_task", "__case__": values}}
    exec(compile(TASK, "kernelbench_task.py", "exec"), namespace)
    return namespace


def _to(value: Any, where: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(where)
    if isinstance(value, list | tuple):
        return tuple(_to(v, where) for v in value)
    return value


def _forked(where: torch.device) -> list[int]:
    """The CUDA device whose generator a seeded block may advance (restored after it)."""
    return [where.index if where.index is not None else torch.cuda.current_device()] if where.type == "cuda" else []


def generate_input(seed: int, **shapes: Any) -> dict[str, Any]:
    """Shape constants: {keys}."""
    task = _task(shapes)
    where = device()
    with torch.random.fork_rng(devices=_forked(where)), where:
        torch.manual_seed(seed)
        init_inputs = tuple(task["get_init_inputs"]())
        model = task["Model"](*init_inputs)
        torch.manual_seed(seed + 2**31)
        inputs = _to(task["get_inputs"](), where)
    state = {{k: v.detach().clone() for k, v in model.state_dict().items()}}
    return {{"inputs": inputs, "init_inputs": _to(init_inputs, where), "state_dict": state}}


_MODELS: dict[tuple[str, str, str], torch.nn.Module] = {{}}


def _model(data: dict[str, Any], dtype: torch.dtype | None = None) -> torch.nn.Module:
    """Model(*init_inputs) on the inputs' device (built once per arguments and dtype; the weights come from data)."""
    tensors = [t for t in data["inputs"] if isinstance(t, torch.Tensor)]
    where = tensors[0].device if tensors else device()
    key = (repr(data["init_inputs"]), str(where), str(dtype))
    if key not in _MODELS:
        with torch.random.fork_rng(devices=_forked(where)), where:
            model = _task(SHAPES)["Model"](*data["init_inputs"])
        _MODELS[key] = model if dtype is None else model.to(dtype)
    return _MODELS[key]


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, list | tuple):
        return tuple(_cast(v, dtype) for v in value)
    return value


def ref_kernel(data: dict[str, Any]) -> Any:
    with torch.no_grad():
        return torch.func.functional_call(_model(data), dict(data["state_dict"]), tuple(data["inputs"]))


def _exact(data: dict[str, Any]) -> Any:
    """The forward in float64 (float32 where an operation has none) from the same inputs and weights."""
    for dtype in (torch.float64, torch.float32):
        try:
            with torch.no_grad():
                state = {{k: _cast(v, dtype) for k, v in data["state_dict"].items()}}
                return torch.func.functional_call(_model(data, dtype), state, _cast(tuple(data["inputs"]), dtype))
        except (RuntimeError, NotImplementedError):
            if dtype is torch.float32:
                raise
    raise AssertionError("unreachable")


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def check_implementation(data: dict[str, Any], output: Any) -> tuple[bool, str]:
    reference = _outputs(ref_kernel(data))  # the dtypes and shapes a kernel must return
    exact = _outputs(_exact(data))
    got = _outputs(output)
    if output is None or len(got) != len(reference):
        kind = type(output).__name__
        return False, f"expected {{len(reference)}} output tensor(s) like Model.forward's, got {{kind}}"
    for i, (out, want, value) in enumerate(zip(got, reference, exact, strict=True)):
        if not isinstance(want, torch.Tensor):
            if out != want:
                return False, f"output {{i}}: got {{out!r}}, expected {{want!r}}"
            continue
        if not want.is_floating_point():
            ok, why = compare(out, want.double(), want.dtype, atol=0.0, rtol=0.0)
        else:
            tol = TOLERANCE.get(want.dtype, 5e-3)
            expected = value.double()
            rms = float(expected.square().mean().sqrt()) if expected.numel() else 0.0
            ok, why = compare(out, expected, want.dtype, atol=tol * rms + 1e-12, rtol=tol)
        if not ok:
            return False, why if len(reference) == 1 else f"output {{i}}: {{why}}"
    return True, ""
'''

TEMPLATE = '''# Starter for {name} (a KernelBench-style task): make ModelNew.forward fast, keep it correct.
#
# custom_kernel(data) gets a dict: data["inputs"] (Model.forward's arguments), data["init_inputs"] (Model's
# constructor arguments) and data["state_dict"] (the weights, fresh for every case). ModelNew is built once and
# called with those weights (torch.func.functional_call): keep Model's parameter names, so they load into it.
# Below is the task's own code; its shape constants are the benchmark's, and the cases set their own.
{source}

class ModelNew(Model):
    """Model's parameters; write your own forward (custom kernels), returning what Model.forward returns."""

    def forward(self, *args):
        return super().forward(*args)


_built = {{}}


def custom_kernel(data):
    tensors = [t for t in data["inputs"] if isinstance(t, torch.Tensor)]
    where = tensors[0].device if tensors else torch.device("cpu")
    key = (repr(data["init_inputs"]), str(where))
    if key not in _built:  # the module once; the weights come from data at every call
        with where:
            _built[key] = ModelNew(*data["init_inputs"])
    with torch.no_grad():
        return torch.func.functional_call(_built[key], dict(data["state_dict"]), tuple(data["inputs"]))
'''

DESCRIPTION = """{summary}Imported from the KernelBench-style task `{file}`: `Model.forward` below is the computation.

Input: `data`, a dict: `data["inputs"]`, the tuple of `Model.forward`'s arguments (`get_inputs()`, drawn from the
case's seed); `data["init_inputs"]`, Model's constructor arguments (`get_init_inputs()`); `data["state_dict"]`, the
weights of `Model(*init_inputs)` built under `torch.manual_seed(seed)`. All tensors are on the device.
Return: what `Model.forward(*inputs)` returns with those weights (same shapes and dtypes).

Shapes: the benchmark uses the task's own ({shapes}); tests use smaller ones. Data type: {dtype}.

Check: every element within `tol * (rms(expected) + |expected|)` of the forward computed in float64 from the same
data, `tol` by the output's dtype: 5e-3 for fp32 (TF32 and any order of summation pass, bf16 inputs do not), 1e-2
for fp16, 3e-2 for bf16; integer outputs exactly.

```python
{model}
```
"""


def _python_text(text: str) -> str:
    """``text`` as a Python string literal: a raw triple-quoted block that reads like the file, where it can be one
    (no triple quote inside, no backslash or quote at its end, no carriage return), else ``repr``."""
    if "'''" in text or text.endswith(("\\", "'")) or "\r" in text:
        return repr(text)
    return f"r'''{text}'''"


class _BlockDumper(yaml.SafeDumper):
    """Writes text of several lines as a YAML block (``|``), as a person would."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _text)


def _plain(text: str) -> str:
    """``text`` as the description may hold it (``problem_rules.text_issue``): line ends as newlines, every other
    control character and every bidirectional control as U+FFFD (the file's text is kept in reference.py)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        "\ufffd" if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F or ch in _BIDI_CONTROLS else ch
        for ch in text
    )


def _cut(text: str, limit: int, more: str) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + more


def _description(task: KernelBenchTask) -> str:
    """The problem's description: the task's docstring, shapes and Model's source, each cut to its share and cleaned
    of control characters, so it always passes the rules on text (at most ``MAX_TEXT_CHARS``)."""
    shapes = ", ".join(f"{k}={v}" for k, v in task.constants.items()) or "no shape constants"
    summary = _cut(_plain(task.summary), SUMMARY_MAX, " … (the task's docstring goes on)")
    fields = {
        "summary": f"{summary}\n\n" if summary else "",
        "file": _plain(task.path.name),
        "shapes": _cut(_plain(shapes), SHAPES_MAX, " …"),
        "dtype": task.dtype.value,
    }
    model = _plain(task.model_source)
    room = MAX_TEXT_CHARS - len(DESCRIPTION.format(**fields, model="")) - 64
    if len(model) > min(DESCRIPTION_SOURCE_MAX, room):
        model = model[: min(DESCRIPTION_SOURCE_MAX, room)] + "\n# ... (reference.py has it all)"
    return DESCRIPTION.format(**fields, model=model)


def problem_files(task: KernelBenchTask, *, seed: int = 1000) -> dict[str, str]:
    """The files of the problem folder, by path relative to it."""
    keys = list(task.constants)
    description = _description(task)
    spec = {
        "description": description,
        "dtype": task.dtype.value,
        "templates": {"pytorch": "templates/pytorch.py"},
        "tests": task.tests(seed),
        "benchmarks": [task.benchmark(seed + 100)],
    }
    reference = REFERENCE.format(
        name=task.name,
        file=task.path.name,
        task=_python_text(task.rewritten),
        shapes=task.constants,
        tuples=sorted(task.tuples),
        keys=", ".join(keys) or "none",
    )
    template = TEMPLATE.format(name=task.name, source=task.template_source)
    header = f"# Imported from {task.path.name} by `kernelcup problems import-kernelbench`.\n"
    task_yml = header + yaml.dump(spec, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=120)
    return {"task.yml": task_yml, "reference.py": reference, "templates/pytorch.py": template}


@dataclass(frozen=True)
class Imported:
    source: Path
    folder: Path
    test_cases: int
    shapes: dict[str, ConstValue]


def import_tasks(paths: list[Path], out: Path, *, force: bool = False) -> list[Imported]:
    """Write one problem folder per file under ``out``. Every file is read first: any error (a file not in the format,
    two files of one name, a folder that exists without ``force``) raises ``ProblemFormatError`` naming each, and
    nothing is written."""
    issues: list[FormatIssue] = []
    parsed: list[KernelBenchTask] = []
    for path in paths:
        try:
            parsed.append(parse_task(path))
        except ProblemFormatError as exc:
            issues.extend(exc.errors)
    seen: dict[str, Path] = {}
    for task in parsed:
        folder = out / task.name
        if task.name in seen:
            issues.append(FormatIssue(str(task.path), "", f"makes the problem {task.name!r}, as {seen[task.name]} "
                                      "does: rename one file"))  # fmt: skip
        seen[task.name] = task.path
        if problem_name_issue(task.name):
            issues.append(FormatIssue(str(task.path), "", str(problem_name_issue(task.name))))
        if folder.exists() and not force:
            issues.append(FormatIssue(str(folder), "", "exists already: pass --force to overwrite its files"))
    made = {task.name: problem_files(task) for task in parsed}
    for task in parsed:
        issues.extend(_validate(task, made[task.name]))
        issues.extend(_blocked(out, task.name, made[task.name]))
    if issues:
        raise ProblemFormatError(issues)
    done = []
    for task in parsed:
        folder = out / task.name
        files = made[task.name]
        for rel, text in files.items():
            try:
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_text(text, encoding="utf-8")
            except OSError as exc:  # raced, or a permission: still a message naming the path, not a traceback
                what = f"cannot be written: {exc.strerror or exc}"
                raise ProblemFormatError([FormatIssue(str(folder / rel), "", what)]) from None
        done.append(Imported(task.path, folder, len(task.tests(0)), task.constants))
    return done


def _blocked(out: Path, name: str, files: dict[str, str]) -> list[FormatIssue]:
    """Paths under ``out`` that stand where the problem folder ``name`` needs a folder (a file named like it) or a
    file (a folder named like one of its files): ``--force`` overwrites files, never these (red team, 2026-11-29: a
    FileExistsError traceback)."""
    issues = []
    for rel in files:
        target = out / name / rel
        for folder in [out, *reversed([p for p in target.parents if out in p.parents])]:
            if folder.exists() and not folder.is_dir():
                issues.append(FormatIssue(str(folder), "", f"is a file where the import needs a folder (for {name}/"
                                          f"{rel}): move or delete it, or import with another --out"))  # fmt: skip
                return issues
        if target.is_dir():
            issues.append(FormatIssue(str(target), "", "is a folder where the import writes a file: move or delete "
                                      "it, or import with another --out"))  # fmt: skip
    return issues


def _validate(task: KernelBenchTask, files: dict[str, str]) -> list[FormatIssue]:
    """The errors ``kernelcup problems validate`` would report on the folder ``files`` make, against the task file
    they came from (the folder is laid out in a temporary directory): an import never reports success for a folder
    that validate refuses (red team, 2026-11-29)."""
    import tempfile

    from leaderboards.problems import load_problem

    with tempfile.TemporaryDirectory(prefix="kernelbench-") as scratch:
        folder = Path(scratch) / task.name
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
        try:
            load_problem(folder)
        except ProblemFormatError as exc:
            where = str(folder)
            why = "the problem it makes would not validate: {}; edit the task file"
            return [FormatIssue(str(task.path), "", why.format(str(e).replace(where, task.name))) for e in exc.errors]
    return []
