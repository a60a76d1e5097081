/**
 * A registry of counters, gauges and histograms laid out from a catalogue: every series of every
 * metric (one per combination of label values, all of them known in advance) is a slot of one
 * `Float64Array`. Counting looks a label value up in a `Map` and adds to a slot: no string is
 * built and nothing is allocated, so the turn path can count freely.
 *
 * @module
 */
import { CATALOGUE, type Catalogue, type LabelSpec, type MetricSpec } from "./catalogue.ts";

/** The values of a metric's labels, in the catalogue's order, each from its closed set. */
export type LabelValues<L extends readonly LabelSpec[]> = {
  -readonly [K in keyof L]: L[K] extends readonly [string, infer V extends readonly string[]]
    ? V[number]
    : never;
};

/** A counter: only goes up. */
export interface Counter<V extends readonly string[]> {
  /** Adds 1 to the series of `labels`. */
  inc(...labels: V): void;
  /** Adds `amount` (0 or more) to the series of `labels`. */
  add(amount: number, ...labels: V): void;
}

/** A gauge: a value that goes up and down. */
export interface Gauge<V extends readonly string[]> {
  set(value: number, ...labels: V): void;
  add(delta: number, ...labels: V): void;
}

/** A histogram: observations counted into fixed buckets, with their sum. */
export interface Histogram<V extends readonly string[]> {
  observe(value: number, ...labels: V): void;
}

/** The instrument that counts a metric of the catalogue. */
export type InstrumentOf<S extends MetricSpec> = S["type"] extends "counter"
  ? Counter<LabelValues<S["labels"]>>
  : S["type"] extends "gauge" ? Gauge<LabelValues<S["labels"]>>
  : Histogram<LabelValues<S["labels"]>>;

/** Every metric of a catalogue, by the catalogue's names. */
export type Instruments<C extends Catalogue> = { readonly [K in keyof C]: InstrumentOf<C[K]> };

/** Where a metric's series sit in the registry's values. */
export interface MetricLayout {
  readonly spec: MetricSpec;
  /** The metric's first slot. */
  readonly offset: number;
  /** One per combination of label values; the last label varies fastest. */
  readonly series: number;
  /** Slots per series: 1, or for a histogram one per bucket, one for `+Inf`, and the sum. */
  readonly width: number;
}

/** Most labels a metric may have (the instruments take their values as plain arguments). */
const MAX_LABELS = 3;

/** The slots of a catalogue, and what fills them. */
export class MetricsRegistry {
  /** The metrics in the catalogue's order. */
  readonly layout: readonly MetricLayout[];
  /** Every slot of every metric. */
  readonly values: Float64Array;
  /** Names the layout: snapshots of another layout (another build) are not merged. */
  readonly fingerprint: string;

  constructor(catalogue: Catalogue) {
    const layout: MetricLayout[] = [];
    let offset = 0;
    for (const spec of Object.values(catalogue)) {
      if (spec.labels.length > MAX_LABELS) {
        throw new RangeError(`Metric "${spec.name}" has more than ${MAX_LABELS} labels`);
      }
      const series = spec.labels.reduce((product, [, values]) => product * values.length, 1);
      const width = spec.type === "histogram" ? (spec.buckets?.length ?? 0) + 2 : 1;
      layout.push({ spec, offset, series, width });
      offset += series * width;
    }
    this.layout = layout;
    this.values = new Float64Array(offset);
    this.fingerprint = fnv1a(JSON.stringify(layout.map(({ spec }) => spec)));
  }
}

/** The instruments of a catalogue over its registry. */
export type Metrics<C extends Catalogue> = Instruments<C> & { readonly registry: MetricsRegistry };

/** The gateway's metrics. */
export type GatewayMetrics = Metrics<typeof CATALOGUE>;

/**
 * A registry for `catalogue` with its instruments; the start-time gauge, when the catalogue has
 * one, is set to now.
 *
 * @example
 * ```ts
 * import { createMetrics } from "./registry.ts";
 * const metrics = createMetrics();
 * metrics.turns.inc("append");
 * metrics.engineSeconds.observe(0.42);
 * metrics.sandboxBoots.inc("local", "ok");
 * ```
 */
export function createMetrics(): GatewayMetrics;
export function createMetrics<C extends Catalogue>(catalogue: C, now?: number): Metrics<C>;
export function createMetrics(catalogue: Catalogue = CATALOGUE, now = Date.now()) {
  if (Object.hasOwn(catalogue, "registry")) {
    throw new RangeError('A catalogue cannot name a metric "registry"');
  }
  const registry = new MetricsRegistry(catalogue);
  const instruments: Record<string, unknown> = { registry };
  const keys = Object.keys(catalogue);
  registry.layout.forEach((layout, i) => {
    const type = layout.spec.type;
    instruments[keys[i]] = type === "histogram"
      ? new HistogramSlots(registry.values, layout)
      : type === "gauge"
      ? new GaugeSlots(registry.values, layout)
      : new CounterSlots(registry.values, layout);
  });
  const startTime = instruments.startTime;
  if (startTime instanceof GaugeSlots) startTime.set(now / 1000);
  return instruments;
}

/** A metric's series: label values to a slot. */
class Slots {
  protected readonly values: Float64Array;
  readonly #offset: number;
  readonly #width: number;
  readonly #name: string;
  readonly #labels: readonly string[];
  readonly #indexes: readonly Map<string, number>[];
  readonly #strides: readonly number[];

  constructor(values: Float64Array, layout: MetricLayout) {
    this.values = values;
    this.#offset = layout.offset;
    this.#width = layout.width;
    this.#name = layout.spec.name;
    const labels = layout.spec.labels;
    this.#labels = labels.map(([name]) => name);
    this.#indexes = labels.map(([, values]) => new Map(values.map((value, i) => [value, i])));
    this.#strides = labels.map((_, i) =>
      labels.slice(i + 1).reduce((product, [, values]) => product * values.length, 1)
    );
  }

  /** The first slot of the series of these label values. */
  protected slot(a?: string, b?: string, c?: string): number {
    const n = this.#indexes.length;
    let series = 0;
    if (n > 0) series += this.#index(0, a);
    if (n > 1) series += this.#index(1, b);
    if (n > 2) series += this.#index(2, c);
    return this.#offset + series * this.#width;
  }

  #index(label: number, value: string | undefined): number {
    const index = this.#indexes[label].get(value!);
    if (index === undefined) {
      throw new RangeError(
        `Cannot count ${this.#name}: "${value}" is not a value of label "${this.#labels[label]}"`,
      );
    }
    return index * this.#strides[label];
  }
}

/** A counter's series: one slot each. */
class CounterSlots extends Slots {
  inc(a?: string, b?: string, c?: string): void {
    this.values[this.slot(a, b, c)] += 1;
  }

  add(amount: number, a?: string, b?: string, c?: string): void {
    if (!(amount >= 0)) throw new RangeError(`Cannot add ${amount} to a counter: it only goes up`);
    this.values[this.slot(a, b, c)] += amount;
  }
}

/** A gauge's series: one slot each. */
class GaugeSlots extends Slots {
  set(value: number, a?: string, b?: string, c?: string): void {
    this.values[this.slot(a, b, c)] = value;
  }

  add(delta: number, a?: string, b?: string, c?: string): void {
    this.values[this.slot(a, b, c)] += delta;
  }
}

/** A histogram's series: a count per bucket (`+Inf` last), then the sum. */
class HistogramSlots extends Slots {
  readonly #bounds: readonly number[];

  constructor(values: Float64Array, layout: MetricLayout) {
    super(values, layout);
    this.#bounds = layout.spec.buckets ?? [];
  }

  observe(value: number, a?: string, b?: string, c?: string): void {
    if (Number.isNaN(value)) return;
    const first = this.slot(a, b, c);
    const bounds = this.#bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]) bucket++;
    this.values[first + bucket] += 1;
    this.values[first + bounds.length + 1] += value;
  }
}

/** FNV-1a of `text`, as 8 hex digits. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}
