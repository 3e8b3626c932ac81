/**
 * Shell completion scripts generated from the command table, so they list exactly the commands,
 * subcommands and flags the parser accepts. Each script finds the command path typed so far
 * (`target up`), then offers that command's subcommands and flags. After a flag it offers the
 * flag's values: paths for a FILE or DIR, the formats of the command for -o/--output, the
 * flag's `choices` (transports, modes, roles), the controllers of /sys/class/nvme for a flag that
 * names one; `--flag=value` completes as `--flag value` does. After `help` it offers the command
 * names, after `completions` the shells.
 */
import type { Command, OptionSpec } from "./command.ts";
import { GLOBAL_OPTIONS } from "./global.ts";

/** One node of the table, flattened: its path and what it offers. */
export interface CompletionNode {
  /** "" for the top level, "target up" for a subcommand. */
  path: string;
  summary: string;
  children: Array<{ name: string; summary: string }>;
  options: Record<string, OptionSpec>;
  /** Words offered as arguments, or "commands" for the table's command names (help). */
  args?: readonly string[] | "commands";
}

/** Every command path of the table, the top level first, with its own and the global flags. */
export function completionNodes(commands: Command[]): CompletionNode[] {
  const out: CompletionNode[] = [{
    path: "",
    summary: "nvmeof",
    children: commands.map((c) => ({ name: c.name, summary: c.summary })),
    options: {
      ...GLOBAL_OPTIONS,
      version: { type: "boolean", description: "Print the version and exit" },
    },
  }];
  const walk = (cmd: Command, prefix: string) => {
    const path = prefix ? `${prefix} ${cmd.name}` : cmd.name;
    const formats = ["text", "json", ...(cmd.outputs ?? [])];
    const output = {
      ...GLOBAL_OPTIONS.output,
      description: `Output format: ${formats.slice(0, -1).join(", ")} or ${formats.at(-1)}`,
      choices: formats,
    };
    out.push({
      path,
      summary: cmd.summary,
      children: (cmd.subcommands ?? []).map((c) => ({ name: c.name, summary: c.summary })),
      options: { ...cmd.options, ...GLOBAL_OPTIONS, output },
      ...(cmd.argChoices ? { args: cmd.argChoices } : {}),
    });
    for (const s of cmd.subcommands ?? []) walk(s, path);
  };
  for (const c of commands) walk(c, "");
  out[0].options.output = { ...GLOBAL_OPTIONS.output, choices: ["text", "json"] };
  return out;
}

function flagWords(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).flatMap(([name, o]) => [
    `--${name}`,
    ...(o.short ? [`-${o.short}`] : []),
  ]);
}

const isPath = (o: OptionSpec) => o.type === "string" && /^(FILE|DIR)$/.test(o.value ?? "");

/** What completes after a flag that takes a value. */
type ValueKind =
  | { kind: "files" }
  | { kind: "controllers" }
  | { kind: "choices"; values: readonly string[] }
  | { kind: "free" };

/** Per node, each flag that takes a value (`-o|--output`) and what completes it. */
function valueFlags(n: CompletionNode): Array<[string, ValueKind]> {
  return Object.entries(n.options).filter(([, o]) => o.type === "string").map(([name, o]) => {
    const flags = [...(o.short ? [`-${o.short}`] : []), `--${name}`].join("|");
    const kind: ValueKind = isPath(o)
      ? { kind: "files" }
      : o.complete === "controllers"
      ? { kind: "controllers" }
      : o.choices?.length
      ? { kind: "choices", values: o.choices }
      : { kind: "free" };
    return [flags, kind];
  });
}

/** The argument words of a node: its subcommands, then its own `args` list. */
function argWords(n: CompletionNode, top: CompletionNode): string[] {
  const args = n.args === "commands" ? top.children.map((c) => c.name) : (n.args ?? []);
  return [...n.children.map((c) => c.name), ...args];
}

function sq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** What a shell runs to complete each kind of flag value. */
interface ValueActions {
  files: string;
  controllers: string;
  choices: (values: readonly string[]) => string;
  free: string;
}

/** What both shells' scripts start from: the nodes, the top one and the alternation of the nodes'
 * paths. */
function scriptParts(commands: Command[]) {
  const nodes = completionNodes(commands);
  const paths = nodes.filter((n) => n.path).map((n) => `" ${n.path}"`).join("|");
  return { nodes, top: nodes[0], paths };
}

/** A node's key in the scripts' case arms: its path as a quoted string. */
const key = (n: CompletionNode) => JSON.stringify(n.path ? " " + n.path : "");

/** Per node, the `case "$prev"` arms that complete its flags' values; `pattern` writes a case
 * pattern in the shell's form, `ret` ends an arm. */
function prevCases(
  nodes: CompletionNode[],
  pattern: (p: string) => string,
  ret: string,
  actions: ValueActions,
): string[] {
  const action = (k: ValueKind) =>
    k.kind === "choices" ? actions.choices(k.values) : actions[k.kind];
  return nodes.map((n) => {
    const inner = valueFlags(n).map(([flags, k]) => `${pattern(flags)} ${action(k)}; ${ret} ;;`);
    return `    ${pattern(key(n))}\n      case "$prev" in\n        ${
      inner.join("\n        ")
    }\n      esac ;;`;
  });
}

/** The part of both shells' scripts after the command path is known: a flag's value is
 * completed by VALUECASES; after --help, HELPCASES set the words (the caller replies with them). */
function valueThenHelp(valueCases: string[], helpCases: string[]): string {
  return [
    `  case "$cmdpath" in`,
    ...valueCases,
    "  esac",
    "  if [[ -n $help ]]; then",
    `    case "$cmdpath" in`,
    ...helpCases,
    "    esac",
  ].join("\n");
}

/** The bash completion script (`source <(nvmeof completions bash)`). */
export function bashCompletion(commands: Command[]): string {
  const { nodes, top, paths } = scriptParts(commands);
  const valueCases = prevCases(nodes, (p) => `${p})`, "return 0", {
    files: "_nvmeof_files",
    controllers: "_nvmeof_controllers",
    choices: (values) => `_nvmeof_reply ${sq(values.join(" "))}`,
    free: "COMPREPLY=()",
  });
  const wordCases = nodes.map((n) =>
    `    ${key(n)}) args=${sq(argWords(n, top).join(" "))} flags=${
      sq(flagWords(n.options).join(" "))
    } ;;`
  );
  const helpCases = nodes.map((n) =>
    `    ${key(n)}) args=${sq(n.children.map((c) => c.name).join(" "))} ;;`
  );
  return `# bash completion for nvmeof, generated by 'nvmeof completions bash' from its command table.
# Install: nvmeof completions bash > /etc/bash_completion.d/nvmeof
_nvmeof_reply() {
  local IFS=$' \\t\\n'
  COMPREPLY=($(compgen -W "$1" -- "$cur"))
  [[ -n $eq ]] && COMPREPLY=("\${COMPREPLY[@]/#/$eq}")
}
_nvmeof_files() {
  compopt -o filenames 2>/dev/null
  local IFS=$'\\n'
  COMPREPLY=($(compgen -f -- "$cur"))
  [[ -n $eq ]] && COMPREPLY=("\${COMPREPLY[@]/#/$eq}")
}
_nvmeof_controllers() {
  local c names=""
  for c in "\${NVMEOF_SYSFS:-/sys}"/class/nvme/nvme*; do
    [[ -e $c ]] && names="$names \${c##*/}"
  done
  _nvmeof_reply "$names"
}
_nvmeof() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmdpath="" w i
  local args="" flags="" eq="" help=""
  # --flag=value: bash's COMP_WORDBREAKS splits it into '--flag' '=' 'value'; without '=' in
  # COMP_WORDBREAKS it stays one word.
  if [[ $cur == = ]]; then
    cur=""
  elif [[ $prev == = && COMP_CWORD -ge 2 ]]; then
    prev=\${COMP_WORDS[COMP_CWORD-2]}
  elif [[ $cur == --*=* ]]; then
    prev=\${cur%%=*} eq="\${cur%%=*}=" cur=\${cur#*=}
  fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    case "$w" in -* | =) continue ;; esac
    if [[ -z $cmdpath && -z $help && $w == help ]]; then
      help=1
      continue
    fi
    case "$cmdpath $w" in
      ${paths}) cmdpath="$cmdpath $w" ;;
    esac
  done
${valueThenHelp(valueCases, helpCases)}
    _nvmeof_reply "$args"
    return 0
  fi
  case "$cmdpath" in
${wordCases.join("\n")}
  esac
  if [[ $cur == -* ]]; then _nvmeof_reply "$flags"; else _nvmeof_reply "$args $flags"; fi
}
complete -F _nvmeof nvmeof
`;
}

function zq(s: string): string {
  // An item of a zsh array for _describe: "name:description", single-quoted.
  return sq(s);
}

/** The zsh completion script (`nvmeof completions zsh > "\${fpath[1]}/_nvmeof"`). */
export function zshCompletion(commands: Command[]): string {
  const { nodes, top, paths } = scriptParts(commands);
  const valueCases = prevCases(nodes, (p) => `(${p})`, "return", {
    files: "_files",
    controllers: "_nvmeof_controllers",
    choices: (values) => `compadd -- ${values.map(sq).join(" ")}`,
    free: "_message 'value'",
  });
  const cases = nodes.map((n) => {
    const args = n.args === "commands"
      ? top.children.map((c) => zq(`${c.name}:${c.summary}`))
      : (n.args ?? []).map((a) => zq(a));
    const subs = [...n.children.map((c) => zq(`${c.name}:${c.summary}`)), ...args].join(" ");
    const flags = Object.entries(n.options).flatMap(([name, o]) => [
      zq(`--${name}:${o.description}`),
      ...(o.short ? [zq(`-${o.short}:${o.description}`)] : []),
    ]).join(" ");
    return `    (${key(n)})\n      subs=(${subs})\n      flags=(${flags}) ;;`;
  });
  const helpCases = nodes.map((n) =>
    `    (${key(n)}) subs=(${n.children.map((c) => zq(`${c.name}:${c.summary}`)).join(" ")}) ;;`
  );
  return `#compdef nvmeof
# zsh completion for nvmeof, generated by 'nvmeof completions zsh' from its command table.
# Install: nvmeof completions zsh > "\${fpath[1]}/_nvmeof"   (then restart zsh)
_nvmeof_controllers() {
  local c
  local -a ctrls
  for c in \${NVMEOF_SYSFS:-/sys}/class/nvme/nvme*(N); do ctrls+=(\${c:t}); done
  compadd -a ctrls
}
_nvmeof() {
  local cmdpath="" w i help="" prev=\${words[CURRENT-1]}
  local -a subs flags
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    [[ $w == -* ]] && continue
    if [[ -z $cmdpath && -z $help && $w == help ]]; then
      help=1
      continue
    fi
    case "$cmdpath $w" in
      (${paths}) cmdpath="$cmdpath $w" ;;
    esac
  done
  # --flag=value completes the value as --flag value does.
  if [[ \${words[CURRENT]} == --*=* ]]; then
    prev=\${\${words[CURRENT]}%%=*}
    compset -P '*='
  fi
${valueThenHelp(valueCases, helpCases)}
    _describe -t commands 'command' subs
    return
  fi
  case "$cmdpath" in
${cases.join("\n")}
  esac
  if [[ \${words[CURRENT]} == -* ]]; then
    _describe -t flags 'flag' flags
  else
    _describe -t commands 'command' subs
  fi
}
_nvmeof "$@"
`;
}

/** The fish completion script (`nvmeof completions fish > ~/.config/fish/completions/nvmeof.fish`). */
export function fishCompletion(commands: Command[]): string {
  const nodes = completionNodes(commands);
  const top = nodes[0];
  const known = nodes.filter((n) => n.path).map((n) => sq(n.path)).join(" ");
  const lines = [
    "# fish completion for nvmeof, generated by 'nvmeof completions fish' from its command table.",
    "# Install: nvmeof completions fish > ~/.config/fish/completions/nvmeof.fish",
    "function __nvmeof_path",
    `    set -l known ${known}`,
    "    set -l p ''",
    "    for w in (commandline -opc)[2..-1]",
    "        string match -q -- '-*' $w; and continue",
    '        set -l cand (string trim -- "$p $w")',
    "        contains -- $cand $known; and set p $cand",
    "    end",
    '    echo "nvmeof $p"', // "nvmeof " at the top level
    "end",
    "function __nvmeof_controllers",
    "    set -l root /sys",
    "    set -q NVMEOF_SYSFS; and set root $NVMEOF_SYSFS",
    "    for c in $root/class/nvme/nvme*",
    "        string replace -r '.*/' '' -- $c",
    "    end",
    "end",
    "complete -c nvmeof -f",
  ];
  for (const n of nodes) {
    // Command paths are plain words, so double quotes inside the single-quoted condition suffice.
    const cond = `'test (__nvmeof_path) = "nvmeof ${n.path}"'`;
    for (const c of n.children) {
      lines.push(`complete -c nvmeof -n ${cond} -a ${sq(c.name)} -d ${sq(c.summary)}`);
    }
    const args = n.args === "commands" ? top.children.map((c) => c.name) : (n.args ?? []);
    if (args.length) lines.push(`complete -c nvmeof -n ${cond} -a ${sq(args.join(" "))}`);
    for (const [name, o] of Object.entries(n.options)) {
      const kind = o.type === "string"
        ? (isPath(o)
          ? " -r -F"
          : o.complete === "controllers"
          ? " -r -f -a '(__nvmeof_controllers)'"
          : o.choices?.length
          ? ` -r -f -a ${sq(o.choices.join(" "))}`
          : " -r -f")
        : "";
      lines.push(
        `complete -c nvmeof -n ${cond} -l ${name}${o.short ? ` -s ${o.short}` : ""}${kind} -d ${
          sq(o.description)
        }`,
      );
    }
  }
  return lines.join("\n") + "\n";
}
