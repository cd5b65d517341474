/**
 * The objects Events are recorded on, built in one place so every recorder names them alike.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import type { EventTarget } from "./ports.ts";

/** The event target of a Node (its whole metadata: the recorder reads name, uid, version). */
export function nodeRef(
  node: V1Node,
): { kind: string; apiVersion: string; metadata: V1Node["metadata"] } {
  return { kind: "Node", apiVersion: "v1", metadata: node.metadata };
}

/** The event target of a Service: name, namespace, uid and resourceVersion only. */
export function serviceTarget(service: V1Service): EventTarget {
  const { name, namespace, uid, resourceVersion } = service.metadata ?? {};
  const metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } =
    {};
  if (name !== undefined) metadata.name = name;
  if (namespace !== undefined) metadata.namespace = namespace;
  if (uid !== undefined) metadata.uid = uid;
  if (resourceVersion !== undefined) metadata.resourceVersion = resourceVersion;
  return { kind: "Service", apiVersion: "v1", metadata };
}
