/**
 * Turning zod issues into sentences that quote the value and say what is allowed, with a
 * "did you mean" for misspelt keys. Folder-internal: `parse_config.ts` uses it.
 *
 * @module
 */
import type { z } from "zod";
import { isDuration } from "./duration.ts";
import { ConfigSchema } from "./schema.ts";
import type { PathSegment } from "./source_lines.ts";
import { closestName } from "../text/closest_name.ts";

/** An issue before it gets its file and line. */
export interface RawIssue {
  path: PathSegment[];
  message: string;
}

/**
 * Rewrites zod's issues as `RawIssue`s, one per unknown key.
 * @param issues from `ConfigSchema.safeParse(raw).error.issues`
 * @param raw the parsed TOML, to quote the offending values
 * @returns the issues, paths pointing at the exact key or element
 */
export function schemaIssues(issues: readonly z.core.$ZodIssue[], raw: unknown): RawIssue[] {
  const out: RawIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === "number" ? p : String(p)));
    if (issue.code === "unrecognized_keys") {
      const known = knownKeys(path);
      for (const key of issue.keys) {
        out.push({ path: [...path, key], message: unknownKeyMessage(key, known) });
      }
      continue;
    }
    out.push({ path, message: issueMessage(issue, valueAt(raw, path)) });
  }
  return out;
}

function issueMessage(issue: z.core.$ZodIssue, value: unknown): string {
  // messages written in schema.ts are predicates ("is not an IP address"); zod's own are
  // capitalised sentences, rewritten below
  const authored = /^[a-z]/.test(issue.message);
  switch (issue.code) {
    case "invalid_type":
      if (value === undefined) return `is missing; expected ${expectedName(issue.expected)}`;
      return `must be ${expectedName(issue.expected)}, not ${describeValue(value)}`;
    case "too_small":
      return authored ? `${describeValue(value)} ${issue.message}` : tooSmall(issue, value);
    case "too_big":
      return authored ? `${describeValue(value)} ${issue.message}` : tooBig(issue, value);
    case "invalid_value":
      return `${describeValue(value)} is not allowed; expected one of ${
        issue.values.map((v) => JSON.stringify(v)).join(", ")
      }`;
    case "invalid_key": {
      const key = issue.path[issue.path.length - 1];
      const inner = issue.issues[0]?.message ?? "is not allowed";
      return `key ${JSON.stringify(String(key))} ${
        /^[a-z]/.test(inner) ? inner : "is not allowed"
      }`;
    }
    default:
      return authored
        ? `${describeValue(value)} ${issue.message}`
        : `${describeValue(value)} is not valid: ${issue.message}`;
  }
}

function tooSmall(issue: z.core.$ZodIssueTooSmall, value: unknown): string {
  const min = Number(issue.minimum);
  if (issue.origin === "array") {
    const have = Array.isArray(value) ? value.length : 0;
    return `must have at least ${plural(min, "entry", "entries")}, not ${have}`;
  }
  if (issue.origin === "string") {
    return min === 1 ? "must not be empty" : `must be at least ${min} characters`;
  }
  return issue.inclusive === false
    ? `must be greater than ${min}, not ${describeValue(value)}`
    : `must be at least ${min}, not ${describeValue(value)}`;
}

function tooBig(issue: z.core.$ZodIssueTooBig, value: unknown): string {
  const max = Number(issue.maximum);
  if (issue.origin === "array") {
    const have = Array.isArray(value) ? value.length : 0;
    return `must have at most ${plural(max, "entry", "entries")}, not ${have}`;
  }
  if (issue.origin === "string") return `must be at most ${max} characters`;
  return issue.inclusive === false
    ? `must be less than ${max}, not ${describeValue(value)}`
    : `must be at most ${max}, not ${describeValue(value)}`;
}

function unknownKeyMessage(key: string, known: string[]): string {
  const suggestion = closestName(key, known);
  if (suggestion !== undefined) return `unknown key; did you mean "${suggestion}"?`;
  return known.length === 0 ? "unknown key" : `unknown key; allowed keys: ${known.join(", ")}`;
}

interface Introspectable {
  _zod: { def: { type: string; innerType?: unknown; element?: unknown; shape?: unknown } };
}

/** The keys the schema allows in the table at `path`, found by walking ConfigSchema. */
function knownKeys(path: PathSegment[]): string[] {
  let schema = ConfigSchema as unknown as Introspectable;
  const steps = [...path];
  for (;;) {
    const def = schema._zod.def;
    if (def.innerType !== undefined) schema = def.innerType as Introspectable;
    else if (def.type === "array" && def.element !== undefined && typeof steps[0] === "number") {
      steps.shift();
      schema = def.element as Introspectable;
    } else if (def.type === "object" && def.shape !== undefined) {
      const shape = def.shape as Record<string, Introspectable>;
      if (steps.length === 0) return Object.keys(shape);
      const next = shape[String(steps.shift())];
      if (next === undefined) return [];
      schema = next;
    } else return [];
  }
}

function valueAt(raw: unknown, path: PathSegment[]): unknown {
  let value = raw;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

function expectedName(expected: string): string {
  const names: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "an integer",
    boolean: "true or false",
    array: "an array",
    tuple: "an array",
    object: "a table",
    record: "a table",
  };
  return names[expected] ?? expected;
}

/**
 * A value as a message quotes it: strings in double quotes, with their TOML type otherwise.
 * @param value a parsed TOML value
 * @returns e.g. `the string "6443"`, `the number 5`, `an array`
 */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  // a validated Config checked again (flags applied) holds durations parsed: quote their text
  if (isDuration(value)) return JSON.stringify(value.text);
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return String(value);
  if (value instanceof Date) return `the date ${value.toISOString()}`;
  if (Array.isArray(value)) return `the array ${JSON.stringify(value)}`;
  if (value !== null && typeof value === "object") return "a table";
  return "nothing";
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
