import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { Ok } from '../../http/envelope.js'
import { IdParams, SatelliteStatus } from './schemas.js'
import { satelliteView } from './views.js'

/** A satellite that stops cleanly says so, rather than leaving its readers to wait 90 s for silence. */
export const satelliteOfflineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/satellites/:id/offline', {
    config: { auth: policy.satellite({ self: 'id' }) },
    schema: {
      tags: ['Satellites'], summary: 'A satellite stopping cleanly (its own API key)',
      description: 'No body. From now until its next heartbeat the satellite reads `offline` and the installations placed on it `unknown`, ' +
        'and it takes no new placements. Meant for a clean stop, after the satellite stopped its instances and sent its last reports. ' +
        "With the satellite's own API key, on its own id only (403 for another); a disabled satellite's key gets 403 SATELLITE_DISABLED; a session or any other credential 401.",
      params: IdParams,
      response: { 200: Ok(Type.Object({ satellite: Type.Object({ id: Type.String(), status: SatelliteStatus }) })) },
    },
  }, async (request) => {
    const satellites = app.services.satellites
    const view = satelliteView(await satellites.markOffline(request.params.id), satellites.silentSince())
    return { success: true as const, message: 'Marked offline until the next heartbeat.', data: { satellite: { id: view.id, status: view.status } } }
  })
}
