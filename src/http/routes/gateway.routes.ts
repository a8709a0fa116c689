import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Guard } from '../auth.js';
import { publicOriginOf } from '../public-url.js';
import { errorResponses } from '../schemas.js';

/** The ports the device gateway listens on, once it does (MQTT_PORT=0 picks one at start). */
export interface GatewayPorts { mqttPort: number; wsPort: number | undefined; tls: boolean }

const Answer = Type.Object({
  mqtt_url: Type.String({ description: 'mqtt://host:port, or mqtts:// with MQTT_TLS_CERT: where devices connect' }),
  mqtt_ws_url: Type.Union([Type.String(), Type.Null()], { description: 'ws://host:port/mqtt when MQTT_WS_PORT is set, otherwise null' }),
});

/**
 * GET /v1/device_gateway: where devices connect, so that a person (the console's "start a
 * simulated device" line) or a provisioning script need not be told the MQTT port separately.
 * The host is the API's public host (PUBLIC_URL, or the request's Host): one server answers both.
 */
export function gatewayRoutes(app: FastifyInstance, deps: { ports(): GatewayPorts; publicUrl: string | undefined; guard: Guard }): void {
  app.get('/v1/device_gateway', {
    preHandler: deps.guard({ anyScope: true }),
    schema: { tags: ['devices'], summary: 'Where devices connect: the MQTT (and MQTT over WebSocket) URL of the device gateway', response: { 200: Answer, ...errorResponses(400, 401) } },
  }, async (req, reply) => {
    const host = new URL(publicOriginOf(req, deps.publicUrl)).hostname;
    const ports = deps.ports();
    if (deps.publicUrl === undefined) reply.header('Vary', 'Host, X-Forwarded-Host, X-Forwarded-Proto');
    return {
      mqtt_url: `${ports.tls ? 'mqtts' : 'mqtt'}://${host}:${ports.mqttPort}`,
      mqtt_ws_url: ports.wsPort === undefined ? null : `ws://${host}:${ports.wsPort}/mqtt`,
    };
  });
}
