/**
 * The line of each key, table header and array element of a TOML document, so every config issue
 * can say `keelson.toml:14:`. smol-toml returns plain values without positions, so the document is
 * parsed again by toml-eslint-parser, whose syntax tree carries source positions and resolves
 * `[[array]]` headers to their element index. This runs only when there is an issue to locate.
 *
 * It replaced a hand-written lenient reader. Measured against it (2 shared cores): the 18 config
 * fixtures and the example inventory 1.9 ms instead of 0.5 ms for all 19, a pool of 100k entries
 * 208 ms instead of 79 ms, the same line for each of the example's 182 paths; but linear where the
 * old one was quadratic: a header of 2k dotted keys 2 ms instead of 78 ms, of 50k 107 ms instead
 * of never finishing. A maintained parser also follows every TOML rule the old reader guessed at.
 *
 * @module
 */
import { parseTOML } from "toml-eslint-parser";

/** One step of a path: a key or an array index (zod's `PropertyKey[]` narrowed). */
export type PathSegment = string | number;

/** A node of the line index: the line where a path starts, and the paths below it. */
interface LineNode {
  line?: number;
  children?: Map<PathSegment, LineNode>;
}

/**
 * The line of every key, table header and array element of one document, as a tree keyed by
 * path segment: memory and time stay linear even for a header of 50k dotted keys (a map keyed by
 * whole path texts would hold 50k texts of up to 50k segments each).
 */
export class LineIndex {
  readonly #root: LineNode = {};
  #size = 0;

  /** Number of paths recorded. */
  get size(): number {
    return this.#size;
  }

  /**
   * The node of `path`, created when missing.
   * @param parent where to start (the root by default)
   * @param segment one step below it
   */
  child(parent: LineNode | undefined, segment: PathSegment): LineNode {
    const from = parent ?? this.#root;
    from.children ??= new Map();
    let node = from.children.get(segment);
    if (node === undefined) from.children.set(segment, node = {});
    return node;
  }

  /** Records `line` on `node` unless an earlier line is recorded there. */
  record(node: LineNode, line: number): void {
    if (node.line !== undefined) return;
    node.line = line;
    this.#size++;
  }

  /**
   * The line of `path`, or of its nearest ancestor that is recorded.
   * @param path keys and indices from the root
   * @returns the 1-based line, or undefined when nothing on the path is recorded
   */
  lineOf(path: readonly PropertyKey[]): number | undefined {
    let node: LineNode | undefined = this.#root;
    let found: number | undefined;
    for (const segment of path) {
      node = node.children?.get(typeof segment === "number" ? segment : String(segment));
      if (node === undefined) break;
      if (node.line !== undefined) found = node.line;
    }
    return found;
  }
}

const BARE_KEY_REGEXP = /^[A-Za-z0-9_-]+$/;

/**
 * Renders a path the way issues show it: `machines[3].internal_ips[0]`,
 * `machines[0].labels["example.com/disk"]`.
 * @param path keys and indices from the root
 * @returns the dotted text; empty for the root
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) out = appendSegment(out, segment);
  return out;
}

/** `formatPath([...path, segment])` given `formatPath(path)`: O(segment), not O(path). */
function appendSegment(prefix: string, segment: PropertyKey): string {
  if (typeof segment === "number") return `${prefix}[${segment}]`;
  if (typeof segment === "string" && BARE_KEY_REGEXP.test(segment)) {
    return prefix === "" ? segment : `${prefix}.${segment}`;
  }
  return `${prefix}[${JSON.stringify(String(segment))}]`;
}

// The parts of toml-eslint-parser's tree this file reads (its own types are ESLint-flavoured).
interface Located {
  loc: { start: { line: number } };
}
interface KeyNode extends Located {
  keys: ({ type: "TOMLBare"; name: string } | { type: "TOMLQuoted"; value: string })[];
}
interface KeyValueNode extends Located {
  type: "TOMLKeyValue";
  key: KeyNode;
  value: ValueNode;
}
interface TableNode extends Located {
  type: "TOMLTable";
  kind: "standard" | "array";
  resolvedKey: (string | number)[];
  body: KeyValueNode[];
}
type ValueNode =
  | (Located & { type: "TOMLArray"; elements: ValueNode[] })
  | (Located & { type: "TOMLInlineTable"; body: KeyValueNode[] })
  | (Located & { type: "TOMLValue" });

/**
 * Records the line of every key, table header and array element.
 * @param text a TOML document (one smol-toml accepted; anything else yields an empty index)
 * @returns the index for `locateLine`
 */
export function indexLines(text: string): LineIndex {
  const index = new LineIndex();
  let top: { body: (KeyValueNode | TableNode)[] };
  try {
    top = parseTOML(text).body[0] as unknown as typeof top;
  } catch {
    return index;
  }
  const keyValues = (table: LineNode | undefined, body: readonly KeyValueNode[]): void => {
    // an explicit stack, so a deeply nested document cannot overflow the call stack
    const pairsToDo: [LineNode | undefined, readonly KeyValueNode[]][] = [[table, body]];
    const valuesToDo: [LineNode, ValueNode][] = [];
    while (pairsToDo.length > 0 || valuesToDo.length > 0) {
      const pendingValue = valuesToDo.pop();
      if (pendingValue) {
        const [node, value] = pendingValue;
        if (value.type === "TOMLArray") {
          value.elements.forEach((element, i) => {
            const at = index.child(node, i);
            index.record(at, element.loc.start.line);
            valuesToDo.push([at, element]);
          });
        } else if (value.type === "TOMLInlineTable") pairsToDo.push([node, value.body]);
        continue;
      }
      const [base, pairs] = pairsToDo.pop()!;
      for (const pair of pairs) {
        let node = base;
        for (const key of pair.key.keys) {
          node = index.child(node, key.type === "TOMLBare" ? key.name : key.value);
          index.record(node, pair.loc.start.line);
        }
        if (node !== undefined) valuesToDo.push([node, pair.value]);
      }
    }
  };
  for (const item of top.body) {
    if (item.type === "TOMLKeyValue") {
      keyValues(undefined, [item]);
      continue;
    }
    let node: LineNode | undefined;
    for (const segment of item.resolvedKey) {
      node = index.child(node, segment);
      // the array itself, then its element: both point at the element's header
      index.record(node, item.loc.start.line);
    }
    keyValues(node, item.body);
  }
  return index;
}

/**
 * The line of `path` in the document, or of its nearest ancestor that appears in the text
 * (a missing required key points at its table).
 * @param source TOML text, or an index built by `indexLines` when locating many paths
 * @param path keys and indices, e.g. `["machines", 3, "internal_ips", 0]`
 * @returns the 1-based line, or undefined when nothing on the path is written in the file
 */
export function locateLine(
  source: string | LineIndex,
  path: readonly PropertyKey[],
): number | undefined {
  return (typeof source === "string" ? indexLines(source) : source).lineOf(path);
}
