import { collectDefaultMetrics, Registry } from 'prom-client'

let registry: Registry | null = null

/**
 * The process's own metrics (CPU, memory, heap, handles, garbage collection, event-loop lag from
 * `monitorEventLoopDelay`), in a registry of their own. They describe the process, not an app, so
 * every app built in it (the tests build hundreds) shares one collector: collecting per app would
 * start an event-loop monitor and a GC observer each time.
 */
export function processMetrics(): Registry {
  if (registry === null) {
    registry = new Registry()
    collectDefaultMetrics({ register: registry })
  }
  return registry
}
