import { v7 as uuidv7 } from 'uuid'

/** Opaque ids, UUIDv7 so that primary keys are time-ordered. */
export const newId = (): string => uuidv7()
