import type { Registry } from 'prom-client'

type Labels = Readonly<Record<string, string>>

/** One series of the histogram: the count of each bucket (not cumulative; the last is +Inf), sum and count. */
export class Series {
  readonly counts: number[]
  sum = 0
  count = 0

  constructor(readonly labels: Labels, buckets: number) {
    this.counts = new Array<number>(buckets + 1).fill(0)
  }
}

/**
 * A Prometheus histogram written for the hot path (every request, every statement): an
 * observation is a few additions on a series its caller found once, with no label object hashed
 * per observation (prom-client's `observe` validates and hashes its labels on every call, 1–3 µs).
 * It is read at scrape time through prom-client's registry, in the same text as prom-client's own
 * histograms.
 */
export class CountingHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly all: Series[] = []

  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[], registers: Registry[]) {
    for (const registry of registers) registry.registerMetric(this as never)
  }

  series(labels: Labels): Series {
    const series = new Series(labels, this.bounds.length)
    this.all.push(series)
    return series
  }

  observe(series: Series, seconds: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && seconds > this.bounds[bucket]!) bucket++
    series.counts[bucket]!++
    series.sum += seconds
    series.count++
  }

  /** The values as prom-client's registry reads a histogram: each series' cumulative buckets, +Inf, sum and count. */
  async getForPromString() {
    const values: Array<{ labels: Record<string, string | number>; sharedLabels: Labels; value: number; metricName: string; exemplar?: null }> = []
    for (const series of this.all) {
      let cumulative = 0
      for (const [index, bound] of this.bounds.entries()) {
        cumulative += series.counts[index]!
        values.push({ labels: { le: bound }, sharedLabels: series.labels, value: cumulative, metricName: `${this.name}_bucket`, exemplar: null })
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_bucket`, exemplar: null })
      values.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` })
      values.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** The JSON form (`registry.getMetricsAsJSON()`): each value's labels in one object. */
  async get() {
    const metric = await this.getForPromString()
    return { ...metric, values: metric.values.map(({ labels, sharedLabels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })) }
  }

  reset(): void {
    for (const series of this.all) {
      series.counts.fill(0)
      series.sum = 0
      series.count = 0
    }
  }
}
