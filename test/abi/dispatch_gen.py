"""Writes abi_dispatch.c, the behavioural half of the ABI test (used by gen_abi_dump.py).

Applications compiled against libfabric 1.17 carry its static inline wrappers (fi_send,
fi_cq_read, fi_close, ...) in their own binaries, so what each wrapper does is ABI: which ops
table member it calls, with which arguments in which order, what it does with the result,
and where it checks the table size first (FI_CHECK_OP) and returns -FI_ENOSYS instead.

abi_dispatch.c fills every ops table with recording stubs, wires every fid object to them,
calls each static inline wrapper of the reference headers with recognisable arguments and
prints what reached the stubs.  check-abi.sh builds it against both header trees and
compares the transcripts.  It runs three rounds: distinct non-zero arguments with stubs
returning 7, zero integers with stubs returning 0 (takes the other branch of wrappers like
fi_domain2 and fi_ep_alias), and ops tables that claim to hold only their size field
(shows which wrappers check the size).  Extern functions the wrappers call (fi_dupinfo,
fi_open, fi_param_get, ...) are defined by the program as recording stubs too.
"""

import re
import sys

# Which argument struct each fi_control command carries; a wrapper that builds one on its
# stack (fi_alias, fi_mr_refresh, ...) is checked through the struct's contents.
CONTROL_ARGUMENTS = {
    "FI_ALIAS": "fi_alias", "FI_GET_VAL": "fi_fid_var", "FI_SET_VAL": "fi_fid_var",
    "FI_GET_RAW_MR": "fi_mr_raw_attr", "FI_MAP_RAW_MR": "fi_mr_map_raw",
    "FI_REFRESH": "fi_mr_modify", "FI_EXPORT_FID": "fi_fid_export",
}

# Objects passed where a wrapper takes a plain `struct fid *`: the first such parameter
# gets an endpoint (wrappers like fi_cancel look at the fid_ep around it), later ones other
# objects so that the transcript shows which one went where.
FID_PARAMETER_OBJECTS = ["fid_ep", "fid_cq", "fid_cntr", "fid_eq"]


def split_function_type(type_text):
    """'RET (*)(A, B)' or 'RET (A, B)' -> (RET, [A, B], variadic)."""
    text = type_text.strip()
    if not text.endswith(")"):
        sys.exit(f"not a function type: {type_text}")
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            open_paren = i
            break
    head = text[:open_paren].strip()
    if head.endswith("(*)"):
        head = head[:-3].strip()
    if "(" in head:
        sys.exit(f"function returning a function pointer is not supported: {type_text}")
    params, depth, current = [], 0, ""
    for ch in text[open_paren + 1:-1]:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current.strip())
    if params == ["void"]:
        params = []
    variadic = bool(params) and params[-1] == "..."
    if variadic:
        params.pop()
    return head, params, variadic


def declare(type_text, name):
    """Puts a declarator name into a type name: 'void (*)(void *)' -> 'void (*cb)(void *)'."""
    if "(*)" in type_text:
        return type_text.replace("(*)", f"(*{name})", 1)
    if "[" in type_text:
        i = type_text.index("[")
        return f"{type_text[:i].rstrip()} {name}{type_text[i:]}"
    return f"{type_text} {name}"


def is_pointer(desugared):
    return desugared.endswith("*") or "(*)" in desugared or "[" in desugared


def is_aggregate_value(desugared):
    return re.match(r"^(const )?(struct|union) ", desugared) and not is_pointer(desugared)


def pointee_record(desugared):
    m = re.match(r"^(?:const )?struct (\w+) \*$", desugared)
    return m.group(1) if m else None


def out_pointee_record(desugared):
    """'struct fid_ep **' -> 'fid_ep': a parameter through which an object is returned."""
    m = re.match(r"^struct (\w+) \*\*$", desugared)
    return m.group(1) if m else None


def record_pointer(record):
    return f"struct {record} *"


class DispatchWriter:
    def __init__(self, facts):
        self.records = {name: (tag, members) for tag, name, members in facts.records}
        self.functions = facts.functions
        # Clang resolves typedefs only at the top level of a type, so parameters of a
        # function pointer member may still say fid_t.
        self.typedefs = dict(facts.typedefs)
        self.ops_tables = [name for name in self.records if self.is_ops_table(name)]
        self.objects = [name for name in self.records if self.is_object(name)]
        self.out = []
        self.skipped = []

    # ---- classification of the reference records

    def is_ops_table(self, name):
        tag, members = self.records[name]
        if tag != "struct" or not members or members[0].path != "size":
            return False
        return all(m.type and "(*)" in m.type.desugared for m in members[1:])

    def is_object(self, name):
        _, members = self.records[name]
        return name == "fid" or any(m.path == "fid" and m.type and
                                    m.type.desugared == "struct fid" for m in members)

    # ---- output helpers

    def emit(self, text):
        self.out.append(text)

    def describe_call(self, indent, value, desugared):
        kind = "1" if is_pointer(desugared) else "0"
        return f"{indent}describe((unsigned long long)(uintptr_t)({value}), {kind});\n"

    # ---- parts of the program

    def emit_prologue(self, headers):
        self.emit("#include <setjmp.h>\n#include <signal.h>\n#include <stdint.h>\n"
                  "#include <stdio.h>\n#include <string.h>\n" + headers + "\n")
        self.emit(PROLOGUE)

    def emit_deep_fields(self, indent, pointer, record, prefix=""):
        """Prints every scalar field of *pointer, descending into by-value structs."""
        _, members = self.records[record]
        for member in members:
            if member.type is None:
                continue
            desugared = member.type.desugared
            nested = re.match(r"^struct (\w+)$", desugared)
            if nested and nested.group(1) in self.records:
                self.emit_deep_fields(indent, pointer, nested.group(1),
                                      prefix + member.path + ".")
            elif not is_aggregate_value(desugared) and "[" not in desugared:
                field = f"{pointer}->{prefix}{member.path}"
                self.emit(f"{indent}printf(\" {prefix}{member.path}=\");\n")
                self.emit(self.describe_call(indent, field, desugared))
                self.emit_out_object_fill(indent, field, desugared)

    def emit_stub_body(self, label, written, desugared, names, control_stub):
        self.emit(f"\tprintf(\"    -> {label}(\");\n")
        for name, d in zip(names, desugared):
            self.emit(self.describe_call("\t", name, d))
        self.emit("\tprintf(\" )\\n\");\n")
        for name, d in zip(names, desugared):
            self.emit_out_object_fill("\t", name, d)
        if control_stub:
            self.emit_control_decoding(names)
        ret = written
        if ret != "void":
            self.emit(f"\treturn ({ret})(intptr_t)stub_return;\n")

    def emit_out_object_fill(self, indent, pointer, desugared):
        """Stubs hand back an object through `struct X **` outputs the wrapper owns, so a
        wrapper that goes on using it (fi_import, fi_ep_alias) does not read garbage."""
        record = out_pointee_record(desugared)
        if record is None or (record != "fid" and record not in self.objects):
            return
        target = "&object_fid_cq.fid" if record == "fid" else f"&object_{record}"
        self.emit(f"{indent}if (is_plain_memory({pointer}))\n"
                  f"{indent}\t*{pointer} = ({record_pointer(record)}){target};\n")

    def emit_control_decoding(self, names):
        _, command, arg = names
        self.emit(f"\tif (!is_plain_memory({arg}))\n\t\tgoto done;\n")
        self.emit(f"\tswitch ({command}) {{\n")
        for command_name, record in CONTROL_ARGUMENTS.items():
            if record not in self.records:
                sys.exit(f"control argument struct {record} missing from the reference")
            self.emit(f"\tcase {command_name}: {{\n"
                      f"\t\tconst struct {record} *v = (const struct {record} *){arg};\n"
                      f"\t\tprintf(\"       {command_name} struct {record}:\");\n")
            self.emit_deep_fields("\t\t", "v", record)
            self.emit("\t\tprintf(\"\\n\");\n\t\tbreak;\n\t}\n")
        self.emit("\tdefault:\n\t\tbreak;\n\t}\ndone:\n")

    def emit_table_stubs(self):
        for table in self.ops_tables:
            _, members = self.records[table]
            for member in members[1:]:
                ret, params, variadic = split_function_type(member.type.written)
                _, params_d, _ = split_function_type(member.type.desugared)
                params_d = [self.typedefs.get(p, p) for p in params_d]
                names = [f"a{i}" for i in range(len(params))]
                decl = ", ".join(declare(p, n) for p, n in zip(params, names)) or "void"
                if variadic:
                    decl += ", ..."
                self.emit(f"static {ret} stub_{table}_{member.path}({decl})\n{{\n")
                control = (table == "fi_ops" and member.path == "control")
                self.emit_stub_body(f"{table}.{member.path}", ret, params_d, names, control)
                self.emit("}\n\n")

    def emit_extern_stubs(self):
        self.emit("/* The library functions the wrappers may call, as recording stubs. */\n")
        for function in self.functions:
            if function.static_inline:
                continue
            ret, params, variadic = split_function_type(function.type.written)
            names = [f"a{i}" for i in range(len(params))]
            decl = ", ".join(declare(p, n) for p, n in zip(params, names)) or "void"
            if variadic:
                decl += ", ..."
            desugared = [p.desugared for p in function.params]
            self.emit(f"{ret} {function.name}({decl})\n{{\n")
            self.emit_stub_body(function.name, ret, desugared, names, False)
            self.emit("}\n\n")

    def emit_instances(self):
        for table in self.ops_tables:
            self.emit(f"static struct {table} table_{table};\n")
        for obj in self.objects:
            self.emit(f"static struct {obj} object_{obj};\n")
        self.emit("\n")

    def emit_wiring(self):
        self.emit("static void register_objects(void)\n{\n")
        for obj in self.objects:
            self.emit(f"\tremember_object(\"{obj}\", &object_{obj}, sizeof(object_{obj}));\n")
        self.emit("}\n\n")

        self.emit("/* Called before every wrapper: wrappers like fi_import_log write into them. */\n"
                  "static void reset_tables_and_objects(void)\n{\n")
        for table in self.ops_tables:
            _, members = self.records[table]
            self.emit(f"\tmemset(&table_{table}, 0, sizeof(table_{table}));\n"
                      f"\ttable_{table}.size = short_tables ? sizeof(size_t) : "
                      f"sizeof(table_{table});\n")
            for member in members[1:]:
                self.emit(f"\ttable_{table}.{member.path} = stub_{table}_{member.path};\n")
        for obj in self.objects:
            self.emit(f"\tmemset(&object_{obj}, 0, sizeof(object_{obj}));\n")
            self.emit_object_fields(f"object_{obj}", obj)
        self.emit("}\n\n")

    def emit_object_fields(self, lvalue, record):
        """Points ops members at the stub tables and gives other fields sentinel values."""
        _, members = self.records[record]
        for member in members:
            if member.type is None:
                continue
            target = f"{lvalue}.{member.path}"
            desugared = member.type.desugared
            table = pointee_record(desugared)
            nested = re.match(r"^struct (\w+)$", desugared)
            if table in self.ops_tables:
                self.emit(f"\t{target} = &table_{table};\n")
            elif nested and nested.group(1) in self.records:
                self.emit_object_fields(target, nested.group(1))
            elif is_aggregate_value(desugared) or "[" in desugared:
                continue
            else:
                base = "sentinel_pointer" if is_pointer(desugared) else "sentinel_scalar"
                self.emit(f"\t{target} = (__typeof__({target}))(uintptr_t)"
                          f"{base}(next_field_sentinel++);\n")

    def argument(self, param, index, fid_params_seen):
        desugared = param.desugared
        if out_pointee_record(desugared):
            return f"&out{index}", False
        record = pointee_record(desugared)
        if record == "fid":
            obj = FID_PARAMETER_OBJECTS[fid_params_seen]
            return f"&object_{obj}.fid", True
        if record in self.objects:
            return f"({param.written})&object_{record}", False
        if is_pointer(desugared):
            return f"({param.written})(uintptr_t)sentinel_pointer({index})", False
        return f"({param.written})argument_scalar({index})", False

    def emit_wrapper_calls(self):
        runnable = []
        for function in self.functions:
            if not function.static_inline:
                continue
            if any(is_aggregate_value(p.desugared) for p in function.params):
                self.skipped.append(function.name)
                continue
            runnable.append(function.name)
            args, fid_params_seen = [], 0
            for index, param in enumerate(function.params):
                arg, is_fid = self.argument(param, index + 1, fid_params_seen)
                fid_params_seen += is_fid
                args.append(arg)
            ret, _, _ = split_function_type(function.type.written)
            ret_d, _, _ = split_function_type(function.type.desugared)
            call = f"{function.name}({', '.join(args)})"
            self.emit(f"static void call_{function.name}(void)\n{{\n")
            outputs = [(index + 1, out_pointee_record(p.desugared))
                       for index, p in enumerate(function.params)
                       if out_pointee_record(p.desugared)]
            for index, record in outputs:
                self.emit(f"\tstruct {record} *out{index} = NULL;\n")
            if ret == "void":
                self.emit(f"\t{call};\n")
            else:
                self.emit(f"\t{declare(ret, 'result')} = {call};\n"
                          "\tprintf(\"  returns\");\n")
                self.emit(self.describe_call("\t", "result", ret_d))
                self.emit("\tprintf(\"\\n\");\n")
            for index, _ in outputs:
                self.emit(f"\tprintf(\"  output {index}\");\n")
                self.emit(self.describe_call("\t", f"out{index}", "void *"))
                self.emit("\tprintf(\"\\n\");\n")
            self.emit("}\n\n")
        self.emit("static const struct wrapper wrappers[] = {\n")
        for name in runnable:
            self.emit(f"\t{{ \"{name}\", call_{name} }},\n")
        self.emit("};\n\n")

    def write(self, path, headers, note):
        self.emit(note)
        self.emit_prologue(headers)
        self.emit_instances()
        self.emit_table_stubs()
        self.emit_extern_stubs()
        self.emit_wiring()
        self.emit_wrapper_calls()
        if self.skipped:
            self.emit("/* Not called (a parameter is a struct passed by value): "
                      f"{', '.join(self.skipped)} */\n")
        self.emit(EPILOGUE)
        with open(path, "w") as f:
            f.write("".join(self.out))


PROLOGUE = r"""/* Recognisable values: a pointer argument or field is printed as ptr<offset>, an object
 * of this program as <type>+<offset>, anything else (e.g. a wrapper's local) as "local". */
#define SENTINEL_POINTER_BASE 0x5e000000ULL
#define SENTINEL_POINTER_END  0x5f000000ULL

enum round { DISTINCT_ARGUMENTS, ZERO_ARGUMENTS, SHORT_TABLES };
static enum round round;
static long stub_return;
static int short_tables;
static unsigned next_field_sentinel;

static unsigned long long sentinel_pointer(unsigned index)
{
	return SENTINEL_POINTER_BASE + 0x100ULL * index;
}

static unsigned long long sentinel_scalar(unsigned index)
{
	return 1000 + index;
}

static unsigned long long argument_scalar(unsigned index)
{
	return round == ZERO_ARGUMENTS ? 0 : 100 + index;
}

struct known_object {
	const char *name;
	const char *start;
	size_t size;
};
static struct known_object known_objects[64];
static unsigned known_object_count;

static void remember_object(const char *name, const void *start, size_t size)
{
	if (known_object_count < sizeof(known_objects) / sizeof(known_objects[0])) {
		struct known_object *o = &known_objects[known_object_count++];
		o->name = name;
		o->start = (const char *)start;
		o->size = size;
	}
}

static const struct known_object *find_object(unsigned long long address)
{
	unsigned i;
	for (i = 0; i < known_object_count; i++) {
		uintptr_t start = (uintptr_t)known_objects[i].start;
		if (address >= start && address < start + known_objects[i].size)
			return &known_objects[i];
	}
	return NULL;
}

/* Memory the wrapper itself provides (its locals), as opposed to sentinels we passed. */
static int is_plain_memory(const void *p)
{
	unsigned long long v = (uintptr_t)p;
	return p && !(v >= SENTINEL_POINTER_BASE && v < SENTINEL_POINTER_END) && !find_object(v);
}

static void describe(unsigned long long value, int pointer)
{
	const struct known_object *o;

	if (!pointer)
		printf(" %lld", (long long)value);
	else if (!value)
		printf(" NULL");
	else if (value >= SENTINEL_POINTER_BASE && value < SENTINEL_POINTER_END)
		printf(" ptr%llx", value - SENTINEL_POINTER_BASE);
	else if ((o = find_object(value)))
		printf(" %s+%llu", o->name, value - (uintptr_t)o->start);
	else
		printf(" local");
}

struct wrapper {
	const char *name;
	void (*call)(void);
};

"""

EPILOGUE = r"""static sigjmp_buf crash_jump;

static void on_crash(int signal_number)
{
	siglongjmp(crash_jump, signal_number);
}

static void run_round(enum round which, const char *title)
{
	size_t i;

	round = which;
	stub_return = which == ZERO_ARGUMENTS ? 0 : 7;
	short_tables = which == SHORT_TABLES;
	printf("=== %s\n", title);
	for (i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++) {
		next_field_sentinel = 0;
		reset_tables_and_objects();
		printf("%s:\n", wrappers[i].name);
		fflush(stdout);
		/* A wrapper that dereferences a sentinel crashes the same way with either header
		 * set; record that and go on with the next one. */
		if (sigsetjmp(crash_jump, 1) == 0)
			wrappers[i].call();
		else
			printf("  crashed\n");
		fflush(stdout);
	}
}

int main(void)
{
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	register_objects();
	run_round(DISTINCT_ARGUMENTS, "distinct arguments, stubs return 7");
	run_round(ZERO_ARGUMENTS, "zero integer arguments, stubs return 0");
	run_round(SHORT_TABLES, "ops tables holding only their size field");
	return 0;
}
"""


def emit_dispatch(facts, path, headers, note):
    DispatchWriter(facts).write(path, headers, note)
