import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import type { SatelliteRow } from '../../db/repositories/satellites.js'
import { paginate } from '../../http/envelope.js'
import { satelliteActor } from './actor.js'
import { Done, IdParams, SatelliteEnvelope, SatellitesEnvelope, SatellitesQuery, TeamParams, TeamSatellitesQuery, UpdateSatelliteBody } from './schemas.js'
import { satelliteView } from './views.js'

const tags = ['Satellites']
const manage = policy.session({ permission: 'satellites.manage' })
const statusNote = '`status` is derived when read: `offline` for a satellite whose last heartbeat is more than 90 s old.'

/** Satellites as admins see and manage them. */
export const satelliteRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const satellites = () => app.services.satellites
  const one = (row: SatelliteRow) => ({ satellite: satelliteView(row, satellites().silentSince()) })
  const listed = ({ rows, total }: { rows: SatelliteRow[]; total: number }, limit: number, offset: number) => {
    const silentSince = satellites().silentSince()
    return { success: true as const, data: { satellites: rows.map((row) => satelliteView(row, silentSince)), pagination: paginate(total, limit, offset) } }
  }

  app.get('/api/satellites', {
    config: { auth: policy.session({ permission: 'satellites.view' }) },
    schema: {
      tags, summary: 'Every satellite, newest first',
      description: `Filters: \`status\` (derived, \`offline\` included), \`satellite_type\`, \`team_id\`. ${statusNote}`,
      querystring: SatellitesQuery, response: { 200: SatellitesEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, status, satellite_type: satelliteType, team_id: teamId } = request.query
    return listed(await satellites().list({ limit, offset, status, satelliteType, teamId }), limit, offset)
  })

  app.get('/api/teams/:teamId/satellites', {
    config: { auth: policy.session({ teamPermission: 'team.satellites.view' }) },
    schema: {
      tags: [...tags, 'Teams'], summary: "The team's satellites, newest first",
      description: `For the team's team_admins and global admins. ${statusNote}`,
      params: TeamParams, querystring: TeamSatellitesQuery, response: { 200: SatellitesEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, status } = request.query
    return listed(await satellites().list({ limit, offset, status, teamId: request.params.teamId }), limit, offset)
  })

  app.get('/api/satellites/:id', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: 'A satellite',
      description: `Global admins see every satellite; a team_admin sees their team's (404 for anyone else). ${statusNote}`,
      params: IdParams, response: { 200: SatelliteEnvelope },
    },
  }, async (request) => ({ success: true as const, data: one(await satellites().get(request.params.id, satelliteActor(request))) }))

  app.put('/api/satellites/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Disable or enable a satellite',
      description: '`disabled`: its key is refused (403 SATELLITE_DISABLED) from the next request on. `active`: enabled again; ' +
        'it then shows what its heartbeats said (the last one\'s status while under 90 s old, then `offline`; `inactive` if it never sent one). ' +
        'Setting the status it has already changes nothing.',
      params: IdParams, body: UpdateSatelliteBody, response: { 200: SatelliteEnvelope },
    },
  }, async (request) => {
    const row = await satellites().setStatus(request.params.id, request.body.status, satelliteActor(request))
    // A disabled satellite's installations go to another one (or wait for one).
    if (request.body.status === 'disabled') await app.services.installations.moves.releaseSatellite(row.id)
    return { success: true as const, message: request.body.status === 'disabled' ? 'Satellite disabled.' : 'Satellite enabled.', data: one(row) }
  })

  app.delete('/api/satellites/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Delete a satellite',
      description: 'Its API key stops working at once (401). To pair it again, create a new registration token.',
      params: IdParams, response: { 200: Done },
    },
  }, async (request) => {
    await satellites().delete(request.params.id, satelliteActor(request))
    // Its installations were unplaced with it: they go to another satellite (or wait for one).
    await app.services.installations.moves.placeAllWaiting()
    return { success: true as const, message: 'Satellite deleted.' }
  })
}
