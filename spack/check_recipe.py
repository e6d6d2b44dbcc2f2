#!/usr/bin/env python3
"""Check that kbuf's Spack recipe still agrees with kbuf's CMake; needs no Spack.

Usage: python3 spack/check_recipe.py [--kokkos-recipe PATH]
       (from anywhere; paths are relative to this repository)

Checks:
  1. the recipe byte-compiles;
  2. every CMake variable the recipe passes to kbuf's CMake (the first argument of define(...)
     and define_from_variant(...) outside the test_* methods) exists in the project's CMake
     (CMakeLists.txt, cmake/*.cmake):
     an option(), a cache set(), BUILD_TESTING when CTest is included, a standard CMAKE_*
     variable, or <Pkg>_ROOT for a package the project looks up with find_package(<Pkg>);
  3. every variant named by define_from_variant(...) is declared by the recipe or its base classes;
  4. the install-test consumer project (tests/install/consumer) that the recipe's stand-alone test
     builds exists, looks kbuf up with find_package(kbuf) and builds kbuf-consumer;
  5. every package the project's CMake looks up with find_package() has a depends_on() in the
     recipe;
  6. the recipe repository's repo.yaml declares namespace kbuf with a v2 package API;
  7. every conflicts() and requires() of the recipe carries a msg= (what Spack prints);
  8. the known-bad compiler and Kokkos pairs are refused: Kokkos 5 with GCC <= 10.3 or Clang
     <= 13 (C++20), GCC 12.5 with Kokkos 5.0 to 5.1.1 (Kokkos pull request 9262);
  9. the recipe forwards the version conditions of Kokkos' spack_cuda_arch_map and
     amdgpu_arch_map: its _arch_conditions() helper (run here on its own) reads both forms of
     the maps (name, or (name, condition)), and requires(^kokkos<condition>) is declared in a
     loop over each map. With --kokkos-recipe PATH (the Kokkos package.py of a spack-packages
     checkout) it also lists the conditions that recipe's maps carry today.
 10. the recipe never reads a variant through .variants[...] / .variants.get(...) and .value
     (for an external whose spec names the variant, e.g. kokkos ... cxxstd=17, that value is the
     tuple ('17',), so a comparison with '17' is silently false and the setting never reaches
     CMake); it asks spec.satisfies("name=value") instead.
 11. the stand-alone test can be started on a machine without the GPU of a +cuda / +rocm build
     (a login or build node): a test part that runs a program it built raises SkipTest before
     running it where no GPU is present, and the recipe looks for both (libcuda.so.1 and
     /dev/nvidia*, /dev/kfd).

Prints what it checked and exits non-zero when the recipe and the CMake have drifted apart.
"""

import ast
import os
import py_compile
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO_DIR = ROOT / "spack" / "spack_repo" / "kbuf"
RECIPE = REPO_DIR / "packages" / "kbuf" / "package.py"
REPO_YAML = REPO_DIR / "repo.yaml"
CONSUMER = ROOT / "tests" / "install" / "consumer" / "CMakeLists.txt"

# The project's CMake that declares the cache variables the recipe may pass.
OPTION_FILES = [ROOT / "CMakeLists.txt"] + sorted((ROOT / "cmake").glob("*.cmake"))
# Where the project looks up its dependencies for the parts the recipe can enable (the library,
# the Kokkos Kernels workload, the tests and the benchmarks); the examples stay off in the recipe
# and the install-test projects only look up kbuf itself.
DEPENDENCY_DIRS = ["src", "apps", "tests", "bench"]
DEPENDENCY_SKIP_DIRS = [ROOT / "tests" / "install"]

# find_package() name -> Spack package name
SPACK_NAMES = {
    "Kokkos": "kokkos",
    "KokkosKernels": "kokkos-kernels",
    "doctest": "doctest",
    "benchmark": "benchmark",
    "LAPACK": "lapack",
    "MPI": "mpi",
    "nlohmann_json": "nlohmann-json",
}
# find_package() names that CMake itself answers from the system (its Find modules), which need
# no Spack package.
CMAKE_SYSTEM_PACKAGES = {"Threads"}

# Variants that the recipe's base classes declare.
BASE_VARIANTS = {
    "CMakePackage": {"build_type", "generator", "ipo", "build_system"},
    "CudaPackage": {"cuda", "cuda_arch"},
    "ROCmPackage": {"rocm", "amdgpu_target"},
}


class Report:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def section(self, title):
        self.checks += 1
        print(f"[{self.checks}] {title}")

    def ok(self, msg):
        print(f"    ok    {msg}")

    def fail(self, msg):
        self.failures += 1
        print(f"    FAIL  {msg}")

    def check(self, condition, ok_msg, fail_msg):
        """ok(ok_msg) when condition holds, else fail(fail_msg)."""
        if condition:
            self.ok(ok_msg)
        else:
            self.fail(fail_msg)


def rel(path):
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


# ---- A small CMake reader: command invocations with their arguments ----------------------------

_BRACKET_OPEN = re.compile(r"\[(=*)\[")


def cmake_commands(text):
    """Yield (command name in lower case, [arguments], line) for each command invocation.

    Understands line comments, bracket comments and arguments, quoted arguments with escapes and
    nested parentheses, which is all the project's CMake uses."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "#":
            m = _BRACKET_OPEN.match(text, i + 1)
            if m:
                end = text.find("]" + m.group(1) + "]", m.end())
                end = n if end < 0 else end + len(m.group(1)) + 2
            else:
                end = text.find("\n", i)
                end = n if end < 0 else end
            line += text.count("\n", i, end)
            i = end
        elif c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*\(").match(text, i)
            if not m:
                j = i
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                i = j
                continue
            name = m.group(0).rstrip("(").strip().lower()
            start_line = line
            args, i, line = _cmake_args(text, m.end(), line)
            yield name, args, start_line
        else:
            i += 1


def _cmake_args(text, i, line):
    """Read arguments up to the closing parenthesis; return (args, index after it, line)."""
    n, depth, args = len(text), 0, []
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            m = _BRACKET_OPEN.match(text, i + 1)
            end = (
                text.find("]" + m.group(1) + "]", m.end()) + len(m.group(1)) + 2
                if m
                else text.find("\n", i)
            )
            end = n if end < i else end
            line += text.count("\n", i, end)
            i = end
        elif c == "(":
            depth += 1
            i += 1
        elif c == ")":
            if depth == 0:
                return args, i + 1, line
            depth -= 1
            i += 1
        elif c == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    buf.append(text[j : j + 2])
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            line += text.count("\n", i, j)
            args.append("".join(buf))
            i = j + 1
        elif c == "[" and _BRACKET_OPEN.match(text, i):
            m = _BRACKET_OPEN.match(text, i)
            end = text.find("]" + m.group(1) + "]", m.end())
            end = n if end < 0 else end
            args.append(text[m.end() : end])
            line += text.count("\n", i, end)
            i = end + len(m.group(1)) + 2
        else:
            j = i
            while j < n and text[j] not in ' \t\r\n()"#':
                j += 1
            args.append(text[i:j])
            i = j
    return args, i, line


class CMakeFacts:
    def __init__(self):
        self.cache_vars = {}  # name -> "file:line (option|cache set)"
        self.packages = {}  # find_package name -> "file:line"
        self.ctest = None  # "file:line" of include(CTest)

    def read(self, path, collect_vars=True):
        text = path.read_text(encoding="utf-8")
        for name, args, line in cmake_commands(text):
            where = f"{rel(path)}:{line}"
            if not args:
                continue
            if collect_vars and name in ("option", "cmake_dependent_option"):
                self.cache_vars.setdefault(args[0], f"{where} ({name})")
            elif collect_vars and name == "set" and "CACHE" in args[1:]:
                self.cache_vars.setdefault(args[0], f"{where} (cache set)")
            elif collect_vars and name == "include" and args[0] == "CTest":
                self.ctest = self.ctest or where
            elif name in ("find_package", "find_dependency"):
                self.packages.setdefault(args[0], where)


# ---- The recipe ----------------------------------------------------------------------------


def literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _build_nodes(tree):
    """All nodes except those in stand-alone test methods (test_*): their define() calls
    configure the consumer project, not kbuf's CMake."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef) and child.name.startswith("test"):
                continue
            stack.append(child)


class RecipeFacts:
    def __init__(self, tree):
        self.defines = []  # (kind, cmake var or None, variant or None, line)
        self.variants = {}  # name -> line
        self.depends = {}  # spack package name -> line
        self.bases = set()
        self.constraints = []  # (directive, first arg text, when text, has msg, line)
        for node in sorted(
            _build_nodes(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
        ):
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if isinstance(base, ast.Name):
                        self.bases.add(base.id)
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            fname = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id if isinstance(func, ast.Name) else None
            )
            first = literal(node.args[0]) if node.args else None
            if fname in ("define", "define_from_variant"):
                variant = None
                if fname == "define_from_variant":
                    variant_node = node.args[1] if len(node.args) > 1 else None
                    for kw in node.keywords:
                        if kw.arg == "variant":
                            variant_node = kw.value
                    if variant_node is None:
                        variant = first.lower() if first else None  # Spack's default
                    else:
                        variant = literal(variant_node) or "<not a string literal>"
                self.defines.append((fname, first, variant, node.lineno))
            elif fname in ("conflicts", "requires") and isinstance(func, ast.Name):
                when = next((kw.value for kw in node.keywords if kw.arg == "when"), None)
                has_msg = any(kw.arg == "msg" for kw in node.keywords)
                self.constraints.append(
                    (
                        fname,
                        ast.unparse(node.args[0]) if node.args else "",
                        ast.unparse(when) if when is not None else "",
                        has_msg,
                        node.lineno,
                    )
                )
            elif fname == "variant" and isinstance(func, ast.Name) and first:
                self.variants.setdefault(first, node.lineno)
            elif fname == "depends_on" and isinstance(func, ast.Name) and node.args:
                spec = first
                if spec is None and isinstance(node.args[0], ast.JoinedStr):
                    parts = node.args[0].values
                    spec = literal(parts[0]) if parts else None
                if spec:
                    m = re.match(r"[A-Za-z0-9_-]+", spec)
                    if m:
                        self.depends.setdefault(m.group(0), node.lineno)


def main():
    report = Report()
    print(f"Checking the Spack recipe {rel(RECIPE)} against the CMake in {ROOT}")

    # 1. The recipe compiles.
    report.section("the recipe byte-compiles")
    if not RECIPE.is_file():
        report.fail(f"{rel(RECIPE)} is missing")
        return finish(report)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            py_compile.compile(str(RECIPE), cfile=os.path.join(tmp, "package.pyc"), doraise=True)
            report.ok(f"py_compile {rel(RECIPE)}")
        except py_compile.PyCompileError as e:
            report.fail(f"py_compile {rel(RECIPE)}: {e.msg}")
            return finish(report)
    recipe = RecipeFacts(ast.parse(RECIPE.read_text(encoding="utf-8"), str(RECIPE)))

    cmake = CMakeFacts()
    for path in OPTION_FILES:
        if path.is_file():
            cmake.read(path)
        elif path == ROOT / "CMakeLists.txt":
            report.fail(f"{rel(path)} is missing")

    # 2. Every CMake variable the recipe passes exists in the project's CMake.
    report.section(
        "CMake variables passed by the recipe exist in "
        + ", ".join(rel(p) for p in OPTION_FILES if p.is_file())
    )
    if not recipe.defines:
        report.fail("the recipe passes no CMake variable (no define/define_from_variant found)")
    for kind, var, _variant, line in recipe.defines:
        where = f"{rel(RECIPE)}:{line} {kind}"
        if var is None:
            report.fail(f"{where}: the CMake variable is not a string literal; cannot check it")
        elif var in cmake.cache_vars:
            report.ok(f"{var}  <- {cmake.cache_vars[var]}")
        elif var == "BUILD_TESTING":
            if cmake.ctest:
                report.ok(f"{var}  <- include(CTest) at {cmake.ctest}")
            else:
                report.fail(f"{where}: BUILD_TESTING is passed but the project never does include(CTest)")
        elif var.startswith("CMAKE_"):
            report.ok(f"{var}  (standard CMake variable)")
        elif var.endswith("_ROOT") and var[: -len("_ROOT")] in cmake.packages:
            pkg = var[: -len("_ROOT")]
            report.ok(f"{var}  <- find_package({pkg}) at {cmake.packages[pkg]}")
        else:
            report.fail(
                f"{where}: {var} is neither an option() nor a cache variable of the project's "
                "CMake (renamed or removed?)"
            )

    # 3. Every variant used by define_from_variant exists.
    known = dict(recipe.variants)
    for base, names in BASE_VARIANTS.items():
        if base in recipe.bases:
            for name in names:
                known.setdefault(name, base)
    report.section(
        "variants used by define_from_variant are declared (recipe: "
        + ", ".join(sorted(recipe.variants))
        + "; base classes: "
        + ", ".join(sorted(b for b in BASE_VARIANTS if b in recipe.bases))
        + ")"
    )
    used = [(v, var, line) for kind, var, v, line in recipe.defines if kind == "define_from_variant"]
    if not used:
        report.ok("no define_from_variant in the recipe")
    for variant, var, line in used:
        origin = known.get(variant)
        origin = f"line {origin}" if isinstance(origin, int) else origin
        report.check(variant in known, f"variant '{variant}' ({origin}) -> {var}",
                     f"{rel(RECIPE)}:{line}: {var} uses variant '{variant}', which is not declared")

    # 4. The install-test consumer the recipe's stand-alone test builds.
    report.section(f"the install-test consumer {rel(CONSUMER)} exists")
    if not CONSUMER.is_file():
        report.fail(f"{rel(CONSUMER)} is missing (the recipe's test_consumer builds it)")
    else:
        cmds = list(cmake_commands(CONSUMER.read_text(encoding="utf-8")))
        report.check(any(n == "find_package" and a and a[0] == "kbuf" for n, a, _ in cmds),
                     "find_package(kbuf ...)", f"{rel(CONSUMER)} does not find_package(kbuf)")
        report.check(any(n == "add_executable" and a and a[0] == "kbuf-consumer" for n, a, _ in cmds),
                     "add_executable(kbuf-consumer ...), the program test_consumer runs",
                     f"{rel(CONSUMER)} builds no kbuf-consumer executable (test_consumer runs it)")

    # 5. Every package the CMake looks up has a depends_on.
    deps = CMakeFacts()
    files = [p for p in OPTION_FILES if p.is_file()]
    for d in DEPENDENCY_DIRS:
        files += sorted((ROOT / d).rglob("CMakeLists.txt")) + sorted((ROOT / d).rglob("*.cmake"))
    files = [
        f for f in files if not any(skip in f.parents for skip in DEPENDENCY_SKIP_DIRS)
    ]
    for path in files:
        deps.read(path, collect_vars=False)
    report.section(
        "packages found with find_package() have a depends_on() in the recipe (searched: "
        + ", ".join(["CMakeLists.txt", "cmake/"] + [d + "/" for d in DEPENDENCY_DIRS])
        + ")"
    )
    for pkg, where in sorted(deps.packages.items()):
        if pkg == "kbuf":
            continue
        if pkg in CMAKE_SYSTEM_PACKAGES:
            report.ok(f"find_package({pkg}) at {where}: CMake's own Find module, no depends_on()")
            continue
        spack_name = SPACK_NAMES.get(pkg)
        if spack_name is None:
            report.fail(
                f"find_package({pkg}) at {where}: unknown to this check; add a depends_on() to "
                "the recipe and the name to SPACK_NAMES in spack/check_recipe.py"
            )
        else:
            report.check(spack_name in recipe.depends,
                         f"find_package({pkg}) at {where} -> depends_on('{spack_name}') "
                         f"at line {recipe.depends.get(spack_name)}",
                         f"find_package({pkg}) at {where}: the recipe has no depends_on('{spack_name}')")

    # 6. repo.yaml.
    report.section(f"{rel(REPO_YAML)} declares namespace kbuf and a v2 package API")
    if not REPO_YAML.is_file():
        report.fail(f"{rel(REPO_YAML)} is missing")
    else:
        text = REPO_YAML.read_text(encoding="utf-8")
        ns = re.search(r"^\s*namespace:\s*['\"]?([A-Za-z0-9_]+)", text, re.M)
        api = re.search(r"^\s*api:\s*['\"]?(v\d+\.\d+)", text, re.M)
        if ns and ns.group(1) == "kbuf":
            report.ok("namespace: kbuf")
        else:
            report.fail("namespace is not kbuf")
        if api and api.group(1).startswith("v2."):
            report.ok(f"api: {api.group(1)}")
        else:
            report.fail("api is not v2.x (Spack >= 1.0 layout)")

    tree = ast.parse(RECIPE.read_text(encoding="utf-8"), str(RECIPE))
    check_messages(report, recipe)
    check_known_bad_pairs(report, tree)
    check_arch_conditions(report, tree, kokkos_recipe_arg())
    check_variant_values(report, tree)
    check_gpu_test_skips(report, tree)
    return finish(report)


def kokkos_recipe_arg():
    args = sys.argv[1:]
    if "--kokkos-recipe" in args:
        i = args.index("--kokkos-recipe")
        if i + 1 < len(args):
            return Path(args[i + 1])
    return None


def check_messages(report, recipe):
    report.section("every conflicts() and requires() of the recipe carries a message (msg=)")
    if not recipe.constraints:
        report.fail("the recipe declares no conflicts() or requires()")
    missing = [c for c in recipe.constraints if not c[3]]
    for directive, spec, when, _msg, line in missing:
        report.fail(f"{rel(RECIPE)}:{line}: {directive}({spec}, when={when or '-'}) has no msg=")
    if not missing:
        report.ok(f"{len(recipe.constraints)} conflicts()/requires(), all with msg=")


# (what the recipe must refuse, the conflicts() spec, its when=, words its message must name)
KNOWN_BAD = [
    ("Kokkos 5 with GCC <= 10.3 (C++20)", "%gcc@:10.3", "^kokkos@5:", ["C++20", "10.4"]),
    ("Kokkos 5 with Clang <= 13 (C++20)", "%llvm@:13", "^kokkos@5:", ["C++20"]),
    ("GCC 12.5 compiling kbuf with Kokkos 5.0-5.1.1", "%gcc@12.5", "^kokkos@5.0.0:5.1.1",
     ["12.5", "9262"]),
    ("Kokkos 5.0-5.1.1 built with GCC 12.5", "^kokkos@5.0.0:5.1.1 %gcc@12.5", "", ["12.5", "9262"]),
]


def _text(node):
    # The literal text of a string or f-string argument, '' otherwise.
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def check_known_bad_pairs(report, tree):
    report.section("known-bad compiler and Kokkos pairs are refused with a message")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "conflicts" and node.args:
                kws = {kw.arg: kw.value for kw in node.keywords}
                found.append(
                    (
                        _text(node.args[0]).strip(),
                        _text(kws["when"]).strip() if "when" in kws else "",
                        _text(kws["msg"]) if "msg" in kws else "",
                        node.lineno,
                    )
                )
    for what, spec, when, words in KNOWN_BAD:
        match = [f for f in found if f[0] == spec and f[1] == when]
        if not match:
            report.fail(f"{what}: no conflicts('{spec}'" + (f", when='{when}'" if when else "")
                        + ")")
            continue
        _spec, _when, msg, line = match[0]
        absent = [w for w in words if w not in msg]
        if absent:
            report.fail(f"{what}: the message at line {line} does not name {', '.join(absent)}")
        else:
            report.ok(f"{what}: line {line}")


def _recipe_function(tree, name):
    # Compiles one module-level function of the recipe on its own (it must use builtins only).
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            namespace = {}
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(RECIPE), "exec"), namespace)
            return namespace[name]
    return None


def _kokkos_maps(path):
    # The two arch maps of a Kokkos package.py, read as literals (no Spack needed).
    maps = {}
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in ("spack_cuda_arch_map",
                                                              "amdgpu_arch_map"):
                maps[target.id] = ast.literal_eval(node.value)
    return maps


def _loops_requiring(tree, iterable_name):
    # Lines of requires("^kokkos{...}", ...) calls inside `for ... in <iterable_name>.items()`.
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.For):
            continue
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)
                and isinstance(it.func.value, ast.Name) and it.func.value.id == iterable_name):
            continue
        for inner in ast.walk(node):
            if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                    and inner.func.id == "requires" and inner.args
                    and _text(inner.args[0]).startswith("^kokkos")
                    and any(kw.arg == "msg" for kw in inner.keywords)):
                lines.append(inner.lineno)
    return lines


def check_arch_conditions(report, tree, kokkos_recipe):
    report.section("the version conditions of Kokkos' GPU architecture maps are forwarded")
    helper = _recipe_function(tree, "_arch_conditions")
    if helper is None:
        report.fail("the recipe has no module-level _arch_conditions() helper")
        return
    old_form = {"35": "kepler35", "90": "hopper90"}
    new_form = {"35": ("kepler35", "@:4"), "90": ("hopper90", None), "121": ("blackwell121",
                                                                            "@5.1.0:")}
    got_old, got_new = helper(old_form), helper(new_form)
    if got_old == {"35": ("kepler35", None), "90": ("hopper90", None)}:
        report.ok("_arch_conditions() reads the older maps (arch -> name): no conditions")
    else:
        report.fail(f"_arch_conditions() on an arch -> name map gave {got_old}")
    if got_new == {"35": ("kepler35", "@:4"), "90": ("hopper90", None),
                   "121": ("blackwell121", "@5.1.0:")}:
        report.ok("_arch_conditions() reads the current maps (arch -> (name, condition))")
    else:
        report.fail(f"_arch_conditions() on an arch -> (name, condition) map gave {got_new}")
    for iterable, what in (("_KOKKOS_CUDA_ARCH_CONDITIONS", "cuda_arch"),
                           ("_KOKKOS_AMDGPU_TARGET_CONDITIONS", "amdgpu_target")):
        lines = _loops_requiring(tree, iterable)
        if lines:
            report.ok(f"{what}: requires('^kokkos<condition>', msg=...) in a loop over "
                      f"{iterable} (line {lines[0]})")
        else:
            report.fail(f"{what}: no requires('^kokkos...', msg=...) in a loop over {iterable}")
    if kokkos_recipe is None:
        report.ok("(no --kokkos-recipe given: the Kokkos maps of a spack-packages checkout "
                  "are not listed)")
        return
    if not kokkos_recipe.is_file():
        report.fail(f"--kokkos-recipe {kokkos_recipe}: no such file")
        return
    maps = _kokkos_maps(kokkos_recipe)
    for name in ("spack_cuda_arch_map", "amdgpu_arch_map"):
        if name not in maps:
            report.fail(f"{kokkos_recipe}: no {name}")
            continue
        conds = {a: c for a, (_n, c) in helper(maps[name]).items() if c}
        listing = ", ".join(f"{a} {c}" for a, c in conds.items()) or "none"
        report.ok(f"{name}: {len(maps[name])} architectures, forwarded conditions: {listing}")


def _mentions_variants(node):
    # Whether an expression reads a spec's variant map (x.variants, x.variants[...], .get(...)).
    return any(isinstance(n, ast.Attribute) and n.attr == "variants" for n in ast.walk(node))


def check_variant_values(report, tree):
    report.section("variants are asked with satisfies(), never read as .variants[...].value")
    # Names bound to something read from a variant map, per function (or the module).
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found = []
    for scope in scopes:
        bound = set()
        body = scope.body
        nodes = [n for stmt in body for n in ast.walk(stmt)]
        for n in nodes:
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                if _mentions_variants(n.value):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    bound.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.NamedExpr) and _mentions_variants(n.value):
                bound.add(n.target.id)
        for n in nodes:
            if isinstance(n, ast.Attribute) and n.attr == "value":
                base = n.value
                if _mentions_variants(base) or (isinstance(base, ast.Name) and base.id in bound):
                    found.append((n.lineno, ast.unparse(n)))
    for line, text in sorted(set(found)):
        report.fail(f"{rel(RECIPE)}:{line}: {text} reads a variant's value: for an external "
                    "spec that names the variant it is a tuple; use spec.satisfies('name=value')")
    if not found:
        report.ok("no .value read from a spec's variants")


def _is_test_part(item):
    call = item.context_expr
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "test_part")


def _runs_program(node):
    # Executable(...)(...): a program the test built is run.
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Call)
               and isinstance(n.func.func, ast.Name) and n.func.func.id == "Executable"
               for n in ast.walk(node))


def check_gpu_test_skips(report, tree):
    report.section("the stand-alone test skips running a GPU build's program where no GPU is "
                   "present")
    text = ast.unparse(tree)
    parts = []
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.With) and any(_is_test_part(i) for i in node.items):
                if _runs_program(node):
                    parts.append((fn.name, node))
    if not parts:
        report.fail("no test part of the stand-alone test runs a program (Executable(...)())")
    for name, node in parts:
        run_line = min(n.lineno for n in ast.walk(node) if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Call) and isinstance(n.func.func, ast.Name)
                       and n.func.func.id == "Executable")
        skips = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Raise) and n.exc is not None
                 and "SkipTest" in ast.unparse(n.exc) and n.lineno < run_line]
        if skips:
            report.ok(f"{name}: the test part that runs a program (line {run_line}) raises "
                      f"SkipTest first where it cannot run (line {skips[0]})")
        else:
            report.fail(f"{rel(RECIPE)}:{run_line}: {name} runs a program it built with no "
                        "SkipTest before it: on a machine without the GPU of a +cuda / +rocm "
                        "build the stand-alone test fails instead of skipping the run")
    for what, needle in (("CUDA driver", "libcuda.so.1"), ("NVIDIA device", "/dev/nvidia"),
                         ("AMD GPU (ROCm kernel driver)", "/dev/kfd")):
        if needle in text:
            report.ok(f"looks for the {what}: {needle}")
        else:
            report.fail(f"the recipe never looks for the {what} ({needle})")


def finish(report):
    if report.failures:
        print(f"spack recipe: {report.failures} problem(s) found in {report.checks} checks")
        return 1
    print(f"spack recipe: all {report.checks} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
