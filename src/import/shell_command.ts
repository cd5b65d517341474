/**
 * Commands the importer prints for the operator to paste into a shell. Every word that comes from
 * the imported file is checked against the Kubernetes syntax of what it names (a name, a label
 * key or value) and quoted for a POSIX shell anyway; a word that fails the check yields no command
 * at all, so a hostile name cannot become a command when the line is pasted. Pure.
 *
 * @module
 */
import type { MetallbSelector } from "./metallb_schema.ts";

/** RFC 1123 subdomain: what Kubernetes allows as a Secret's (or most objects') name. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** RFC 1123 label: a Namespace's name. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A label name, and a label value when not empty (apimachinery's qualified name). */
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * A word quoted for a POSIX shell: single quotes, each `'` inside written as `'\''`.
 * @param word any text
 * @returns the word as one shell word, e.g. `'a b'`
 */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9._\/=:,@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Whether the text is an object name Kubernetes accepts (DNS subdomain, at most 253). */
export function isObjectName(text: string): boolean {
  return text.length <= 253 && DNS_SUBDOMAIN.test(text);
}

/** Whether the text is a Namespace name Kubernetes accepts (DNS label, at most 63). */
export function isNamespaceName(text: string): boolean {
  return text.length <= 63 && DNS_LABEL.test(text);
}

/** Whether the text is a label key Kubernetes accepts: `[prefix/]name`. */
export function isLabelKey(text: string): boolean {
  const slash = text.lastIndexOf("/");
  const prefix = slash < 0 ? undefined : text.slice(0, slash);
  const name = slash < 0 ? text : text.slice(slash + 1);
  if (prefix !== undefined && !isObjectName(prefix)) return false;
  return name.length <= 63 && LABEL_NAME.test(name);
}

/** Whether the text is a label value Kubernetes accepts (may be empty). */
export function isLabelValue(text: string): boolean {
  return text === "" || (text.length <= 63 && LABEL_NAME.test(text));
}

/** Whether every key and value of the selector is what Kubernetes accepts in a label. */
export function isValidSelector(selector: MetallbSelector): boolean {
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) =>
    isLabelKey(k) && isLabelValue(v)
  ) &&
    (selector.matchExpressions ?? []).every((e) =>
      isLabelKey(e.key) && (e.values ?? []).every(isLabelValue)
    );
}
