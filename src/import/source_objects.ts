/**
 * The Kubernetes objects of an exported file (`kubectl get … -o yaml|json`): a `List` of items,
 * several YAML documents, or one object. Each object keeps where it came from, so a problem found
 * later names the file, the line and the field. The text is untrusted: every object is checked by
 * a zod schema before a translator reads it (`parseObject`).
 *
 * @module
 */
import { isNode, LineCounter, parseAllDocuments } from "yaml";
import type { z } from "zod";
import type { FileKind } from "../files/read_input_file.ts";

/** A problem with the imported file: one sentence naming file, line and field. */
export class ImportError extends Error {
  /** @param message e.g. `metallb.yaml:12: IPAddressPool "public" spec.addresses: ...` */
  constructor(message: string) {
    super(message);
    this.name = "ImportError";
  }
}

/** One object of the file, with its place in it. */
export interface SourceObject {
  /** `kind` as written. */
  readonly kind: string;
  /** `apiVersion` as written ("" when absent). */
  readonly apiVersion: string;
  /** `metadata.name` ("" when absent). */
  readonly name: string;
  /** The object as plain data. */
  readonly value: Record<string, unknown>;
  /**
   * `file:line` of a field of the object (or of the object when the field is absent).
   * @param path e.g. `["spec", "addresses", 0]`
   */
  at(path: readonly PropertyKey[]): string;
}

/**
 * The largest number of objects read. MetalLB's configuration is tens of objects; the limit is
 * counted on the text before it is parsed, as parsing costs about 40 bytes of memory per byte.
 */
export const MAX_OBJECTS = 10_000;

/**
 * The largest file `keelson import` reads: a MetalLB export of a hundred objects is under
 * 100 KiB, and parsing 1 MiB (some 2,000 objects) peaks at about 240 MB and takes under a
 * second.
 */
export const IMPORT_FILE: FileKind = {
  maxBytes: 1024 * 1024,
  what: "an export of MetalLB's or kube-vip's configuration",
};

/** A `kind` key in YAML or JSON, counted before parsing (an over-count is harmless). */
const KIND_KEY = /(?<![\w-])["']?kind["']?[ \t]*:/g;

/**
 * Parses the exported text.
 * @param text YAML or JSON
 * @param source the file name for messages
 * @returns the objects in file order
 * @throws {ImportError} on a syntax error, or an item that is not an object with a kind
 */
export function readSourceObjects(text: string, source: string): SourceObject[] {
  let kinds = 0;
  for (const _ of text.matchAll(KIND_KEY)) {
    if (++kinds > MAX_OBJECTS) {
      throw new ImportError(
        `${source}: holds more than ${MAX_OBJECTS} objects (counted by their kind fields); ` +
          "MetalLB's or kube-vip's configuration is tens. Export only its resources (the " +
          "command is in keelson import --help)",
      );
    }
  }
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter, uniqueKeys: true });
  if (!Array.isArray(documents)) throw new ImportError(`${source}: the file is empty`);
  const objects: SourceObject[] = [];
  for (const document of documents) {
    const error = document.errors[0];
    if (error) {
      const line = lineCounter.linePos(error.pos[0]).line;
      throw new ImportError(
        `${source}:${line}: cannot parse YAML: ${error.message.split("\n")[0]}`,
      );
    }
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) continue;
    const lineOf = (path: readonly PropertyKey[]): number => {
      for (let n = path.length; n >= 0; n--) {
        const node = document.getIn(path.slice(0, n) as unknown[], true);
        if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
      }
      return 1;
    };
    const add = (item: unknown, base: readonly PropertyKey[]) => {
      if (!isRecord(item)) {
        throw new ImportError(`${source}:${lineOf(base)}: expected a Kubernetes object`);
      }
      if (typeof item.kind !== "string" || item.kind === "") {
        throw new ImportError(`${source}:${lineOf(base)}: the object has no kind`);
      }
      if (objects.length >= MAX_OBJECTS) {
        throw new ImportError(`${source}: holds more than ${MAX_OBJECTS} objects`);
      }
      const metadata = isRecord(item.metadata) ? item.metadata : {};
      objects.push({
        kind: item.kind,
        apiVersion: typeof item.apiVersion === "string" ? item.apiVersion : "",
        name: typeof metadata.name === "string" ? metadata.name : "",
        value: item,
        at: (path) => `${source}:${lineOf([...base, ...path])}`,
      });
    };
    if (isRecord(value) && Array.isArray(value.items)) {
      value.items.forEach((item, i) => add(item, ["items", i]));
    } else add(value, []);
  }
  return objects;
}

/** One YAML document with its place in the file, for a text that is not a Kubernetes object. */
export interface SourceDocument {
  /** The document as plain data (undefined when empty). */
  readonly value: unknown;
  /**
   * `file:line` of a value of the document.
   * @param path e.g. `["address-pools", 0, "addresses", 1]`
   */
  at(path: readonly PropertyKey[]): string;
}

/**
 * Parses a text holding one YAML (or JSON) document that is not a Kubernetes object, such as
 * the body of MetalLB's `config` ConfigMap.
 * @param text the document
 * @param source what `at` names: the file, or the file and the field the text came from
 * @returns the value and where each of its values is
 * @throws {ImportError} on a syntax error or more than one document
 */
export function readSourceDocument(text: string, source: string): SourceDocument {
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter, uniqueKeys: true });
  if (!Array.isArray(documents) || documents.length === 0) {
    return { value: undefined, at: () => `${source}:1` };
  }
  if (documents.length > 1) {
    throw new ImportError(`${source}: holds ${documents.length} YAML documents; expected one`);
  }
  const document = documents[0]!;
  const error = document.errors[0];
  if (error) {
    const line = lineCounter.linePos(error.pos[0]).line;
    throw new ImportError(`${source}:${line}: cannot parse YAML: ${error.message.split("\n")[0]}`);
  }
  const lineOf = (path: readonly PropertyKey[]): number => {
    for (let n = path.length; n >= 0; n--) {
      const node = document.getIn(path.slice(0, n) as unknown[], true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return 1;
  };
  return {
    value: document.toJS({ maxAliasCount: 100 }),
    at: (path) => `${source}:${lineOf(path)}`,
  };
}

/**
 * Checks an object against its schema.
 * @param object the object
 * @param schema the fields the translator reads, with their types
 * @returns the parsed object
 * @throws {ImportError} naming the line and field of the first problem
 */
export function parseObject<T>(object: SourceObject, schema: z.ZodType<T>): T {
  const result = schema.safeParse(object.value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map((p) => typeof p === "number" ? `[${p}]` : `.${String(p)}`)
    .join("").replace(/^\./, "");
  throw new ImportError(
    `${object.at(issue.path)}: ${object.kind} "${object.name}" ${field || "(object)"}: ` +
      issue.message,
  );
}

/** A plain object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
