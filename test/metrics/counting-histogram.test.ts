import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { CountingHistogram } from '../../src/modules/metrics/histogram.js'

/** The counting histogram is read by prom-client's registry: it must read as prom-client's own histogram would. */
describe('the counting histogram', () => {
  const bounds = [0.001, 0.01, 0.1, 1]
  const observations: Array<[string, string, string, number]> = [
    ['GET', '/api/health', '200', 0.0004], ['GET', '/api/health', '200', 0.001], ['GET', '/api/health', '200', 0.05],
    ['POST', '/api/teams', '201', 2.5], ['GET', 'unmatched', '404', 0.1], ['GET', '/api/health', '503', 0.0101],
  ]

  function both() {
    const ours = new Registry()
    const theirs = new Registry()
    const histogram = new CountingHistogram('http_request_duration_seconds', 'Time to answer.', bounds, [ours])
    const reference = new Histogram({ name: 'http_request_duration_seconds', help: 'Time to answer.', labelNames: ['method', 'route', 'status_code'], buckets: bounds, registers: [theirs] })
    const series = new Map<string, ReturnType<CountingHistogram['series']>>()
    for (const [method, route, status, seconds] of observations) {
      const key = `${method} ${route} ${status}`
      if (!series.has(key)) series.set(key, histogram.series({ method, route, status_code: status }))
      histogram.observe(series.get(key)!, seconds)
      reference.labels(method, route, status).observe(seconds)
    }
    return { ours, theirs, histogram }
  }

  it('writes the same exposition text and JSON as prom-client for the same observations', async () => {
    const { ours, theirs } = both()
    expect(await ours.metrics()).toBe(await theirs.metrics())
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON())
    expect(await Registry.merge([new Registry(), ours]).metrics()).toContain('http_request_duration_seconds_bucket{le="0.01",method="GET",route="/api/health",status_code="200"} 2')
  })

  it('resets to zero, keeping its series', async () => {
    const { ours, histogram } = both()
    histogram.reset()
    const text = await ours.metrics()
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/api/health",status_code="200"} 0')
    expect(text).not.toMatch(/ [1-9]\d*$/m)
  })

  it('reads as an unlabelled prom-client histogram with one series and no labels (the statement times)', async () => {
    const ours = new Registry()
    const theirs = new Registry()
    const histogram = new CountingHistogram('db_query_duration_seconds', 'Statement times.', bounds, [ours])
    const reference = new Histogram({ name: 'db_query_duration_seconds', help: 'Statement times.', buckets: bounds, registers: [theirs] })
    const series = histogram.series({})
    for (const seconds of [0.00005, 0.002, 0.002, 3]) {
      histogram.observe(series, seconds)
      reference.observe(seconds)
    }
    expect(await ours.metrics()).toBe(await theirs.metrics())
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON())
    expect(await ours.metrics()).toContain('db_query_duration_seconds_bucket{le="0.01"} 3')
  })
})
