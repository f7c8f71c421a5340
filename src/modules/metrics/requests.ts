import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { routeOptionsOf } from '../../http/route-options.js'
import type { CountingHistogram, Series } from './histogram.js'

/** The route label of a request no route matched: the raw URL would make the label set unbounded. */
const UNMATCHED_ROUTE = 'unmatched'

/** The series of one route by method and status, each made on first use. */
class RouteSeries {
  private readonly byMethod = new Map<string, Map<number, Series>>()

  constructor(private readonly histogram: CountingHistogram, private readonly route: string) {}

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

  constructor(private readonly histogram: CountingHistogram) {
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
