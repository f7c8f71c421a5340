import type { PlacedInstallation } from '../../db/repositories/channel.js'
import type { ConnectionTokenRow, ConnectionsRepository } from '../../db/repositories/connections.js'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import type { TokensBox } from '../connections/tokens-box.js'

/**
 * The live OAuth connections a satellite's document uses: read once per build for every
 * installation placed there that has an oauth input (one query), opened only for the instance
 * that sends the token.
 */

export interface ConnectionSource {
  connections: Pick<ConnectionsRepository, 'liveTokensFor'>
  tokens: Pick<TokensBox, 'openTokens'>
}

/** An installation's oauth inputs, by key: the first one's token is the instance's Authorization. */
export const oauthInputsOf = (inputs: readonly InstallationInput[]): InstallationInput[] =>
  inputs.filter((input) => input.kind === 'oauth').sort((a, b) => (a.key < b.key ? -1 : 1))

const placeOf = (installationId: string, userId: string | null, inputKey: string): string => `${installationId}\n${userId ?? ''}\n${inputKey}`

export class LiveConnections {
  private constructor(private readonly rows: ReadonlyMap<string, ConnectionTokenRow>, private readonly source: ConnectionSource | undefined) {}

  static async read(source: ConnectionSource | undefined, placed: readonly PlacedInstallation[]): Promise<LiveConnections> {
    const ids = placed.filter((row) => row.installation.inputs.some((input) => input.kind === 'oauth')).map((row) => row.installation.id)
    const rows = source === undefined || ids.length === 0 ? [] : await source.connections.liveTokensFor(ids)
    return new LiveConnections(new Map(rows.map((row) => [placeOf(row.installationId, row.userId, row.inputKey), row])), source)
  }

  /**
   * The live connection an input needs for the instance of `userId` (null: the shared one): the
   * team's for a team-scoped input, the member's own for a user-scoped one; undefined when there is none.
   */
  of(installationId: string, input: InstallationInput, userId: string | null): ConnectionTokenRow | undefined {
    return this.rows.get(placeOf(installationId, input.scope === 'team' ? null : userId, input.key))
  }

  /** The access token in the clear; throws when the sealed tokens do not open. */
  accessToken(row: ConnectionTokenRow): string {
    if (this.source === undefined) throw new Error('no connection source')
    return this.source.tokens.openTokens({ installationId: row.installationId, userId: row.userId, inputKey: row.inputKey }, row.sealed).access_token
  }
}
