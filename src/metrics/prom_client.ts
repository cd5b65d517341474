/**
 * What `import ... from "prom-client"` gives in this project: deno.json maps the bare name here.
 * prom-client's metric classes come from their own files, because its index also loads the push
 * gateway (node:http, node:https, node:zlib), the cluster aggregator (node:cluster) and every
 * default metric (one of them the OpenTelemetry API, 51 modules), none of which Keelson uses:
 * ~1.5 MB of RSS for every `keelson` process. The types are the index's, unchanged.
 *
 * @module
 */
import type * as Prom from "prom-client/index.js";
import CounterClass from "prom-client/lib/counter.js";
import GaugeClass from "prom-client/lib/gauge.js";
import HistogramClass from "prom-client/lib/histogram.js";
import RegistryClass from "prom-client/lib/registry.js";

/** prom-client's Counter. */
export const Counter = CounterClass as typeof Prom.Counter;
/** prom-client's Counter. */
export type Counter<T extends string = string> = Prom.Counter<T>;
/** prom-client's Gauge. */
export const Gauge = GaugeClass as typeof Prom.Gauge;
/** prom-client's Gauge. */
export type Gauge<T extends string = string> = Prom.Gauge<T>;
/** prom-client's Histogram. */
export const Histogram = HistogramClass as typeof Prom.Histogram;
/** prom-client's Histogram. */
export type Histogram<T extends string = string> = Prom.Histogram<T>;
/** prom-client's Registry. */
export const Registry = RegistryClass as typeof Prom.Registry;
/** prom-client's Registry. */
export type Registry = Prom.Registry;
/** prom-client's Metric. */
export type Metric<T extends string = string> = Prom.Metric<T>;
