#!/usr/bin/env python3
"""Generate the ABI test sources from a reference set of libfabric headers.

The reference is Debian bookworm's libfabric-dev (libfabric 1.17) in /usr/include/rdma.
Three C files are written next to this script:

  abi_dump.c   prints, one fact per line, sizeof/offsetof/member size of every public
               struct and union field, sizeof of every named enum and typedef, the value of
               every enumerator and of every object-like macro that is an integer constant
               (or a string literal), and names every function and function-like macro.
               check-abi.sh compiles it against the reference headers and against ours and
               requires identical output.
  abi_types.c  compile-only: asserts that each field, typedef and function (including the
               static inline wrappers) has exactly the type written in the reference
               headers, so a differently typed member or wrapper fails to build.
  abi_dispatch.c  calls every static inline wrapper against recording ops tables and
               prints which member it reached with which arguments (see dispatch_gen.py).

Facts are read with clang's JSON AST dump (structs, enums, typedefs, functions) and with
`gcc -E -dD` (macros); every candidate macro is probed with the compiler to keep only the
ones that are constant expressions.  Needs python3, clang and gcc; the generated files are
committed, so the test itself only needs gcc.

Usage: gen_abi_dump.py [--include-dir /usr/include] [--out-dir DIR]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

from dispatch_gen import emit_dispatch

HEADERS = [
    "rdma/fabric.h", "rdma/fi_errno.h", "rdma/fi_domain.h", "rdma/fi_endpoint.h",
    "rdma/fi_eq.h", "rdma/fi_cm.h", "rdma/fi_rma.h", "rdma/fi_tagged.h", "rdma/fi_atomic.h",
    "rdma/fi_collective.h", "rdma/fi_trigger.h", "rdma/fi_ext.h",
    "rdma/providers/fi_prov.h", "rdma/providers/fi_log.h",
]

# Object-like macros defined by the headers that are deliberately not compared.
MACRO_EXCLUSIONS = {
    # Include guards: their names are an implementation detail of each header.
    "FABRIC_H", "FI_ERRNO_H", "FI_DOMAIN_H", "FI_ENDPOINT_H", "FI_EQ_H", "FI_CM_H",
    "FI_RMA_H", "FI_TAGGED_H", "FI_ATOMIC_H", "FI_COLLECTIVE_H", "FI_TRIGGER_H", "FI_EXT_H",
    "FI_PROV_H", "FI_LOG_H",
}

# Function-like macros get an existence check; these also get sample evaluations because
# applications compute with them (version checks).
FUNCTION_MACRO_SAMPLES = [
    "FI_VERSION(1, 17)", "FI_VERSION(2, 0)", "FI_MAJOR(FI_VERSION(1, 17))",
    "FI_MINOR(FI_VERSION(1, 17))", "FI_VERSION_GE(FI_VERSION(1, 17), FI_VERSION(1, 5))",
    "FI_VERSION_GE(FI_VERSION(1, 4), FI_VERSION(1, 5))",
    "FI_VERSION_LT(FI_VERSION(1, 4), FI_VERSION(1, 5))",
    "FI_VERSION_LT(FI_VERSION(1, 17), FI_VERSION(1, 5))",
]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def umbrella_source():
    return "".join(f"#include <{h}>\n" for h in HEADERS)


def is_reference_file(path, include_dir):
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(include_dir))
    return rel in HEADERS


# ---------------------------------------------------------------- clang AST reading

class LocationTracker:
    """Clang's JSON omits a location's file when it equals the previously printed one, so
    the file of a node is only known by replaying every location in document order."""

    def __init__(self):
        self.current = None

    def visit_location(self, loc):
        if "spellingLoc" in loc:
            self.visit_location(loc["spellingLoc"])
            return self.visit_location(loc["expansionLoc"])
        if "file" in loc:
            self.current = loc["file"]
        return self.current

    def walk(self, node, on_node):
        """Calls on_node(node, file) for every AST node, in document order.  Clang prints a
        node's own locations before its children, so they are replayed first."""
        if isinstance(node, list):
            for item in node:
                self.walk(item, on_node)
            return
        if not isinstance(node, dict):
            return
        node_file = self.current
        for key, value in node.items():
            if key == "loc":
                node_file = self.visit_location(value)
            elif key == "range":
                self.visit_location(value.get("begin", {}))
                self.visit_location(value.get("end", {}))
            elif key != "inner" and isinstance(value, (dict, list)):
                # References to other declarations: only their locations count.
                self.walk(value, lambda node, file: None)
        if "kind" in node:
            on_node(node, node_file)
        self.walk(node.get("inner", []), on_node)


def read_ast(include_dir, workdir):
    src = os.path.join(workdir, "umbrella.h")
    with open(src, "w") as f:
        f.write(umbrella_source())
    res = run(["clang", "-x", "c", "-std=gnu99", "-fsyntax-only", "-nostdinc",
               "-isystem", include_dir] + system_include_flags() +
              ["-Xclang", "-ast-dump=json", src])
    if res.returncode != 0:
        sys.exit("clang failed:\n" + res.stderr)
    return json.loads(res.stdout)


def system_include_flags():
    """The compiler's own include path (stddef.h etc.), then /usr/include for libc."""
    res = run(["clang", "-print-resource-dir"])
    return ["-isystem", os.path.join(res.stdout.strip(), "include"),
            "-isystem", "/usr/include/x86_64-linux-gnu", "-isystem", "/usr/include"]


class Facts:
    def __init__(self):
        self.records = []      # (tag, name, [Member])
        self.enums = []        # (name or None, [enumerator names])
        self.typedefs = []     # (name, qual_type)
        self.functions = []    # [Function]
        self.int_macros = []
        self.string_macros = []
        self.function_macros = []
        self.other_macros = []     # attribute/declaration helpers: existence only


# A type as written in the header (with typedef names) and with typedefs resolved.
TypeName = collections.namedtuple("TypeName", "written desugared")
# type is None for a member whose type is an unnamed struct/union.
Member = collections.namedtuple("Member", "path type")
Function = collections.namedtuple("Function", "name type static_inline params")


def type_of(node):
    t = node["type"]
    return TypeName(t["qualType"], t.get("desugaredQualType", t["qualType"]))


def is_anonymous_record_type(qual_type):
    return "(unnamed" in qual_type or "(anonymous" in qual_type


def record_members(record, prefix=""):
    """Flattens a record into member paths usable in offsetof/member access.  Members of an
    anonymous union/struct are reached by their own names; members of a named field whose
    type is an unnamed union are reached through that field ("attr.pci")."""
    members = []
    pending_unnamed = None
    for child in record.get("inner", []):
        kind = child["kind"]
        if kind == "RecordDecl" and "name" not in child:
            pending_unnamed = child
        elif kind == "FieldDecl":
            if child.get("isBitfield"):
                sys.exit(f"bit-field {child.get('name')} cannot be checked with offsetof")
            qual_type = child["type"]["qualType"]
            name = child.get("name")
            anonymous_type = is_anonymous_record_type(qual_type)
            if name:
                path = prefix + name
                members.append(Member(path, None if anonymous_type else type_of(child)))
            if anonymous_type:
                if pending_unnamed is None:
                    sys.exit(f"cannot find the definition of {qual_type}")
                nested_prefix = (prefix + name + ".") if name else prefix
                members.extend(record_members(pending_unnamed, nested_prefix))
                pending_unnamed = None
    return members


def collect_ast_facts(ast, include_dir, facts):
    seen_records, seen_functions, seen_typedefs = set(), set(), set()
    tracker = LocationTracker()

    def on_node(node, file):
        if file is None or not is_reference_file(file, include_dir):
            return
        kind = node["kind"]
        name = node.get("name")
        if kind == "RecordDecl" and name and node.get("completeDefinition"):
            if name not in seen_records:
                seen_records.add(name)
                facts.records.append((node["tagUsed"], name, record_members(node)))
        elif kind == "EnumDecl":
            enumerators = [c["name"] for c in node.get("inner", [])
                           if c["kind"] == "EnumConstantDecl"]
            facts.enums.append((name, enumerators))
        elif kind == "TypedefDecl" and name not in seen_typedefs:
            seen_typedefs.add(name)
            facts.typedefs.append((name, node["type"]["qualType"]))
        elif kind == "FunctionDecl" and name not in seen_functions:
            seen_functions.add(name)
            static_inline = node.get("storageClass") == "static" and node.get("inline", False)
            params = [type_of(p) for p in node.get("inner", []) if p["kind"] == "ParmVarDecl"]
            facts.functions.append(Function(name, type_of(node), static_inline, params))

    tracker.walk(ast, on_node)


# ---------------------------------------------------------------- macros

DEFINE_RE = re.compile(r"#define\s+(\w+)(\(?)\s*(.*)$")
LINE_MARKER_RE = re.compile(r'# \d+ "([^"]+)"')


def collect_macros(include_dir, workdir, facts):
    src = os.path.join(workdir, "umbrella.h")
    res = run(["gcc", "-E", "-dD", "-nostdinc", "-isystem", include_dir] +
              gcc_system_include_flags() + [src])
    if res.returncode != 0:
        sys.exit("gcc -E failed:\n" + res.stderr)
    current_file = None
    object_like = []
    for line in res.stdout.splitlines():
        marker = LINE_MARKER_RE.match(line)
        if marker:
            current_file = marker.group(1)
            continue
        m = DEFINE_RE.match(line)
        if not m or current_file is None or not is_reference_file(current_file, include_dir):
            continue
        name, paren, body = m.groups()
        if paren:
            if name not in facts.function_macros:
                facts.function_macros.append(name)
        elif name not in MACRO_EXCLUSIONS and body.strip() and name not in object_like:
            object_like.append(name)
    facts.int_macros = probe_macros(object_like, include_dir, workdir,
                                    "enum {{ abi_probe_{i} = (({name}) ? 1 : 0) }};")
    rest = [n for n in object_like if n not in facts.int_macros]
    facts.string_macros = probe_macros(rest, include_dir, workdir,
                                       "static const char abi_probe_{i}[] = {name};")
    facts.other_macros = [n for n in rest if n not in facts.string_macros]


def gcc_system_include_flags():
    res = run(["gcc", "-print-file-name=include"])
    return ["-isystem", res.stdout.strip(), "-isystem", "/usr/include/x86_64-linux-gnu",
            "-isystem", "/usr/include"]


def probe_macros(names, include_dir, workdir, template):
    """Returns the names for which `template` compiles, by compiling all probes in one file
    and dropping the ones whose line gets an error until the file compiles."""
    candidates = list(names)
    src = os.path.join(workdir, "probe.c")
    while candidates:
        header = umbrella_source()
        first_line = header.count("\n") + 1
        with open(src, "w") as f:
            f.write(header)
            for i, name in enumerate(candidates):
                f.write(template.format(i=i, name=name) + "\n")
        res = run(["gcc", "-std=c99", "-pedantic-errors", "-fsyntax-only", "-nostdinc",
                   "-isystem", include_dir] + gcc_system_include_flags() + [src])
        if res.returncode == 0:
            return candidates
        bad_lines = {int(m.group(1)) for m in
                     re.finditer(re.escape(src) + r":(\d+):\d+: error", res.stderr)}
        bad = {candidates[line - first_line] for line in bad_lines
               if 0 <= line - first_line < len(candidates)}
        if not bad:
            sys.exit("probe failed without attributable errors:\n" + res.stderr)
        candidates = [n for n in candidates if n not in bad]
    return candidates


# ---------------------------------------------------------------- output

GENERATED_NOTE = ("/* Generated by test/abi/gen_abi_dump.py from the libfabric 1.17 headers;\n"
                  " * regenerate instead of editing. */\n")


def emit_dump(facts, path):
    out = [GENERATED_NOTE,
           "#include <stdio.h>\n#include <stddef.h>\n", umbrella_source(), "\n",
           "#define SIZE(label, type) \\\n"
           "\tprintf(\"sizeof %s = %llu\\n\", label, (unsigned long long)sizeof(type))\n",
           "#define MEMBER(label, type, member) \\\n"
           "\tprintf(\"member %s offset %llu size %llu\\n\", label, \\\n"
           "\t       (unsigned long long)offsetof(type, member), \\\n"
           "\t       (unsigned long long)sizeof(((type *)0)->member))\n",
           "/* Flexible array members have no size of their own. */\n"
           "#define FLEXIBLE_MEMBER(label, type, member) \\\n"
           "\tprintf(\"member %s offset %llu flexible\\n\", label, \\\n"
           "\t       (unsigned long long)offsetof(type, member))\n",
           "#define VALUE(name) \\\n"
           "\tprintf(\"value %s = %llu\\n\", #name, (unsigned long long)(name))\n",
           "/* Type size and signedness matter too: FI_X (1U << 31) differs from (1ULL << 31). */\n"
           "#define INT_MACRO(name) \\\n"
           "\tprintf(\"macro %s = %llu size %llu signed %d\\n\", #name, \\\n"
           "\t       (unsigned long long)(name), (unsigned long long)sizeof(name), \\\n"
           "\t       (int)((name) * 0 - 1 < 0))\n",
           "#define STRING_MACRO(name) printf(\"macro %s = \\\"%s\\\"\\n\", #name, name)\n",
           "#define FUNCTION(name) \\\n"
           "\tprintf(\"function %s pointer size %llu\\n\", #name, \\\n"
           "\t       (unsigned long long)sizeof(&name))\n",
           "\n"]

    out.append("static void dump_records(void)\n{\n")
    for tag, name, members in facts.records:
        type_name = f"{tag} {name}"
        out.append(f"\tSIZE(\"{type_name}\", {type_name});\n")
        for member, member_type in members:
            flexible = member_type and member_type.written.endswith("[]")
            macro = "FLEXIBLE_MEMBER" if flexible else "MEMBER"
            out.append(f"\t{macro}(\"{type_name}.{member}\", {type_name}, {member});\n")
    out.append("}\n\n")

    out.append("static void dump_enums_and_typedefs(void)\n{\n")
    for name, enumerators in facts.enums:
        if name:
            out.append(f"\tSIZE(\"enum {name}\", enum {name});\n")
        for e in enumerators:
            out.append(f"\tVALUE({e});\n")
    for name, _ in facts.typedefs:
        out.append(f"\tSIZE(\"{name}\", {name});\n")
    out.append("}\n\n")

    # Macros are looked up with #ifdef so that a missing one shows up in the diff
    # next to its neighbours instead of as a compile error.
    out.append("static void dump_macros(void)\n{\n")
    for name in facts.int_macros:
        out.append(f"#ifdef {name}\n\tINT_MACRO({name});\n#else\n"
                   f"\tprintf(\"macro {name} undefined\\n\");\n#endif\n")
    for name in facts.string_macros:
        out.append(f"#ifdef {name}\n\tSTRING_MACRO({name});\n#else\n"
                   f"\tprintf(\"macro {name} undefined\\n\");\n#endif\n")
    for kind, names in (("function-like macro", facts.function_macros),
                        ("macro", facts.other_macros)):
        for name in names:
            out.append(f"#ifdef {name}\n\tprintf(\"{kind} {name} defined\\n\");\n#else\n"
                       f"\tprintf(\"{kind} {name} undefined\\n\");\n#endif\n")
    for sample in FUNCTION_MACRO_SAMPLES:
        c_string = sample.replace('"', '\\"')
        out.append(f"\tprintf(\"macro sample {c_string} = %llu\\n\", "
                   f"(unsigned long long)({sample}));\n")
    out.append("}\n\n")

    out.append("/* Only names the functions: calling them is the dispatch test's job; taking\n"
               " * their address makes a missing one (inline or not) fail to compile. */\n")
    out.append("static void dump_functions(void)\n{\n")
    for function in facts.functions:
        out.append(f"\tFUNCTION({function.name});\n")
    out.append("}\n\n")

    out.append("int main(void)\n{\n\tdump_records();\n\tdump_enums_and_typedefs();\n"
               "\tdump_macros();\n\tdump_functions();\n\treturn 0;\n}\n")
    with open(path, "w") as f:
        f.write("".join(out))


def emit_types(facts, path):
    out = [GENERATED_NOTE,
           "/* Compile-only (gcc -std=gnu11 -fsyntax-only): each assertion states the type a\n"
           " * name has in the reference headers; a mismatch in ours stops the build. */\n",
           "#include <stddef.h>\n", umbrella_source(), "\n",
           "#define SAME_TYPE(expr, type, what) \\\n"
           "\t_Static_assert(__builtin_types_compatible_p(__typeof__(expr), type), what)\n\n"]
    for tag, name, members in facts.records:
        for member, member_type in members:
            if member_type is None:
                continue
            out.append(f"SAME_TYPE((({tag} {name} *)0)->{member}, {member_type.written},\n"
                       f"\t\"type of {tag} {name}.{member}\");\n")
    for name, qual_type in facts.typedefs:
        out.append(f"SAME_TYPE({name}, {qual_type}, \"typedef {name}\");\n")
    for function in facts.functions:
        what = "static inline " if function.static_inline else ""
        out.append(f"SAME_TYPE({function.name}, {function.type.written},\n"
                   f"\t\"{what}function {function.name}\");\n")
    with open(path, "w") as f:
        f.write("".join(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--include-dir", default="/usr/include")
    parser.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    include_dir = os.path.abspath(args.include_dir)

    facts = Facts()
    with tempfile.TemporaryDirectory() as workdir:
        ast = read_ast(include_dir, workdir)
        collect_ast_facts(ast, include_dir, facts)
        collect_macros(include_dir, workdir, facts)

    emit_dump(facts, os.path.join(args.out_dir, "abi_dump.c"))
    emit_types(facts, os.path.join(args.out_dir, "abi_types.c"))
    emit_dispatch(facts, os.path.join(args.out_dir, "abi_dispatch.c"), umbrella_source(),
                  GENERATED_NOTE)
    print(f"{len(facts.records)} records, {len(facts.enums)} enums, "
          f"{len(facts.typedefs)} typedefs, {len(facts.functions)} functions, "
          f"{len(facts.int_macros)} integer macros, {len(facts.string_macros)} string "
          f"macros, {len(facts.function_macros)} function-like macros, "
          f"{len(facts.other_macros)} other macros")


if __name__ == "__main__":
    main()
