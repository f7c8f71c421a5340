import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { connectionsRepository, type ConnectionRow } from '../../src/db/repositories/connections.js'
import { desiredStamps } from '../../src/db/repositories/desired-stamps.js'
import { newId } from '../../src/db/ids.js'
import type { InstallationInput } from '../../src/formats/installation-inputs.js'
import { connectionTokensBox, type ConnectionTokens } from '../../src/modules/connections/tokens-box.js'
import { TEST_SECRET } from './app.js'

/**
 * Connections written straight into the database, for the tests of what uses them (documents,
 * statuses, the refresher) apart from the connect flow: an oauth input added to an installation,
 * and a connection's tokens stored as the flow stores them (sealed with the connections key, bound
 * to installation, user and key). Each write moves the stamps of the satellites concerned, as the
 * service's own writes do.
 */

export const tokensBox = connectionTokensBox(TEST_SECRET)

/** Adds an oauth input for `resource` to an installation (its key is `oauth:<resource>`); answers the key. */
export async function addOAuthInput(app: FastifyInstance, installationId: string, resource: string, scope: 'team' | 'user'): Promise<string> {
  const { database } = app.services
  const i = database.t.mcpInstallations
  const [row] = await database.db.select({ inputs: i.inputs }).from(i).where(eq(i.id, installationId))
  const key = `oauth:${resource}`
  const input: InstallationInput = {
    key, kind: 'oauth', description: 'Connect an account of the remote server', required: true, secret: true, scope,
    oauth: { resource, resource_metadata: null, scopes: [] },
  }
  await database.db.update(i).set({ inputs: [...row!.inputs.filter((each) => each.key !== key), input] }).where(eq(i.id, installationId))
  await desiredStamps(database).ofInstallations([installationId])
  return key
}

export interface StoredConnection {
  installationId: string
  teamId: string
  /** Null: the team's connection. */
  userId: string | null
  inputKey: string
  issuer?: string
  clientId?: string
  tokens: ConnectionTokens
  refreshAt?: Date | null
}

/** Stores (or replaces) a connection, connected; answers its row. */
export async function storeConnection(app: FastifyInstance, connection: StoredConnection): Promise<ConnectionRow> {
  const { database } = app.services
  const place = { installationId: connection.installationId, userId: connection.userId, inputKey: connection.inputKey }
  const now = new Date()
  const row = await connectionsRepository(database).upsert({
    id: newId(), installationId: connection.installationId, teamId: connection.teamId, userId: connection.userId, owner: connection.userId ?? 'team',
    inputKey: connection.inputKey, issuer: connection.issuer ?? 'https://as.example.test', clientId: connection.clientId ?? 'client-of-the-tests',
    status: 'connected', sealed: tokensBox.sealTokens(place, connection.tokens), refreshAt: connection.refreshAt ?? null, connectedAt: now, updatedAt: now,
  })
  await desiredStamps(database).ofInstallations([connection.installationId])
  return row
}

/** Sets a connection's status (as the refresher does when its refresh token is refused). */
export async function setConnectionStatus(app: FastifyInstance, id: string, status: 'connected' | 'expired'): Promise<void> {
  const { database } = app.services
  const c = database.t.oauthConnections
  const [row] = await database.db.update(c).set({ status }).where(eq(c.id, id)).returning({ installationId: c.installationId })
  await desiredStamps(database).ofInstallations([row!.installationId])
}

/** The tokens a connection holds now, opened. */
export async function tokensOf(app: FastifyInstance, id: string): Promise<{ row: ConnectionRow; tokens: ConnectionTokens }> {
  const { database } = app.services
  const c = database.t.oauthConnections
  const [row] = await database.db.select().from(c).where(eq(c.id, id))
  return { row: row!, tokens: tokensBox.openTokens({ installationId: row!.installationId, userId: row!.userId, inputKey: row!.inputKey }, row!.sealed) }
}

/** Token fields of a bearer access token that expires in an hour (no refresh token unless given). */
export const bearerTokens = (accessToken: string, refreshToken?: string): ConnectionTokens => ({
  access_token: accessToken, ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }), token_type: 'bearer',
  expires_at: new Date(Date.now() + 3_600_000).toISOString(), scope: '', account: null,
})
