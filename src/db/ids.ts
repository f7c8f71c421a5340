import { v7 as uuidv7 } from 'uuid'

/** SPEC §2.2: opaque ids, UUIDv7 so that primary keys are time-ordered. */
export const newId = (): string => uuidv7()
