import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Registry } from 'prom-client'
import { routeOptionsOf } from '../../http/route-options.js'

/** The route label of a request no route matched: the raw URL would make the label set unbounded. */
const UNMATCHED_ROUTE = 'unmatched'

type Labels = { method: string; route: string; status_code: string }

/** One series of the histogram: the count of each bucket (not cumulative; the last is +Inf), sum and count. */
class Series {
  readonly counts: number[]
  sum = 0
  count = 0

  constructor(readonly labels: Labels, buckets: number) {
    this.counts = new Array<number>(buckets + 1).fill(0)
  }
}

/**
 * A Prometheus histogram written for the request path: an observation is a few additions on a
 * series found once per route, method and status, with no label object hashed per request
 * (prom-client's `observe` validates and hashes its labels on every call, 1–3 µs). It is read
 * at scrape time through prom-client's registry, in the same text as prom-client's own histograms.
 */
export class RequestHistogram {
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

/** The series of one route by method and status, each made on first use. */
class RouteSeries {
  private readonly byMethod = new Map<string, Map<number, Series>>()

  constructor(private readonly histogram: RequestHistogram, private readonly route: string) {}

  observe(method: string, status: number, seconds: number): void {
    let byStatus = this.byMethod.get(method)
    if (byStatus === undefined) this.byMethod.set(method, (byStatus = new Map()))
    let series = byStatus.get(status)
    if (series === undefined) byStatus.set(status, (series = this.histogram.series({ method, route: this.route, status_code: String(status) })))
    this.histogram.observe(series, seconds)
  }
}

/**
 * Requests by method, route pattern and status: one histogram, whose `_count` is the request
 * count. Its cost per request is a few map lookups and additions.
 */
export class RequestMetrics {
  /** Keyed by the route's config object, which Fastify keeps for the route's lifetime. */
  private readonly routes = new WeakMap<object, RouteSeries>()
  private readonly unmatched: RouteSeries

  constructor(private readonly histogram: RequestHistogram) {
    this.unmatched = new RouteSeries(histogram, UNMATCHED_ROUTE)
  }

  observe(request: FastifyRequest, reply: FastifyReply): void {
    const seconds = reply.elapsedTime / 1000
    if (request.is404) return this.unmatched.observe(request.method, reply.statusCode, seconds)
    const { config } = routeOptionsOf(request)
    let route = this.routes.get(config)
    if (route === undefined) this.routes.set(config, (route = new RouteSeries(this.histogram, config.url)))
    route.observe(request.method, reply.statusCode, seconds)
  }
}

/** Every answer is observed once it is sent; callback style, so the hook costs no promise. */
export function observeRequests(app: FastifyInstance, requests: RequestMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(request, reply)
    done()
  })
}
