import { randomFillSync } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'

/** Opaque ids, UUIDv7 so that primary keys are time-ordered. */
export const newId = (): string => uuidv7()

/**
 * `count` ids made together, ascending in the order given. The random bytes of all of them are
 * drawn at once: a draw per id was most of the cost of a thousand ids (a batch of tool calls).
 */
export function newIds(count: number): string[] {
  const random = randomFillSync(new Uint8Array(count * 16))
  const msecs = Date.now()
  // One millisecond and a counter from a random 31-bit start, as uuid numbers ids made within
  // one millisecond: each id is after the one before it, and the rest of its bits are its own.
  const first = (((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!) >>> 0
  const ids = new Array<string>(count)
  for (let index = 0; index < count; index++) {
    ids[index] = uuidv7({ msecs, seq: first + index, random: random.subarray(index * 16, index * 16 + 16) })
  }
  return ids
}
