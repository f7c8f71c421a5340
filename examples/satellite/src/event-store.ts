/**
 * What a client session was sent, kept so that a stream cut short resumes where it stopped: a
 * client that reconnects with `Last-Event-ID` gets the later messages of that same stream (the
 * streamable HTTP transport's resumability). One store per session, bounded by count and bytes:
 * the oldest events go first, and an id that has gone is answered 400 by the transport, so the
 * client starts a new stream instead of missing messages silently.
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

export interface EventStoreLimits {
  /** The most events kept (priming events included). */
  events: number
  /** The most bytes of serialized messages kept. */
  bytes: number
}

export const DEFAULT_EVENT_LIMITS: EventStoreLimits = { events: 1000, bytes: 2 * 1024 * 1024 }

interface Stored {
  id: string
  streamId: string
  message: JSONRPCMessage
  size: number
}

export class BoundedEventStore implements EventStore {
  private readonly events: Stored[] = []
  /** The index in `events` of each id still kept, offset by `dropped`. */
  private readonly positions = new Map<string, number>()
  private dropped = 0
  private bytes = 0
  private sequence = 0

  constructor(private readonly limits: EventStoreLimits = DEFAULT_EVENT_LIMITS) {}

  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    this.sequence += 1
    const id = `${this.sequence}`
    const size = JSON.stringify(message).length
    this.positions.set(id, this.dropped + this.events.length)
    this.events.push({ id, streamId, message, size })
    this.bytes += size
    while (this.events.length > this.limits.events || (this.bytes > this.limits.bytes && this.events.length > 1)) {
      const oldest = this.events.shift()!
      this.positions.delete(oldest.id)
      this.bytes -= oldest.size
      this.dropped += 1
    }
    return Promise.resolve(id)
  }

  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const position = this.positions.get(eventId)
    return Promise.resolve(position === undefined ? undefined : this.events[position - this.dropped]!.streamId)
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const position = this.positions.get(lastEventId)
    if (position === undefined) throw new Error('the event is no longer kept')
    const { streamId } = this.events[position - this.dropped]!
    // A copy: sending may store more events meanwhile.
    for (const event of this.events.slice(position - this.dropped + 1)) {
      // Priming events (an id and nothing else) only gave the client a cursor.
      if (event.streamId === streamId && 'jsonrpc' in event.message) await send(event.id, event.message)
    }
    return streamId
  }

  /** Events kept now (tests, figures). */
  get size(): number {
    return this.events.length
  }
}
