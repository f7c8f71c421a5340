import { messagePage } from '../../lib/html.js'
import type { Connected } from './flow.js'

/** The callback's page: which server and account were connected, for whom, and the way back. */
export function connectedPage(connected: Connected, back: string): string {
  const who = connected.account === null ? 'your account' : `the account ${connected.account}`
  const forWhom = connected.scope === 'team' ? 'for the whole team' : 'for you'
  return messagePage({
    title: `Connected to ${connected.serverName}`,
    message: `The installation "${connected.installationName}" now reaches ${connected.serverName} with ${who}, ${forWhom}. Tokens are kept encrypted and refreshed before they expire.`,
    tone: 'success',
    hint: 'You can close this page, or go back.',
    links: [{ href: back, label: 'Back' }],
  })
}
