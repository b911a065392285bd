import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { Services } from '../services/index.ts';
import { installAuth } from './auth.ts';
import { installErrorHandling } from './errors.ts';
import { installMethodIndex } from './method-not-allowed.ts';
import { installRequestLog, requestId } from './request-log.ts';
import { registerRoutes } from './routes/index.ts';
import { MIN_DISCARD_BYTES, installUnreadBodyDrain } from './unread-body.ts';
import { lazySerializerCompiler } from './lazy-serializers.ts';
import { validatorCompiler } from './validation.ts';

export type App = FastifyInstance;

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyContextConfig {
    /** The JSON body's NUL and lone surrogates become U+FFFD (record ingestion; see domain/text.ts). */
    storableText?: boolean;
  }
}

const SECRET_PATHS = [
  'req.headers.authorization',
  'req.headers["service-api-key"]',
  'req.headers["platform-ao-api-key"]',
  'req.headers["galileo-api-key"]',
  'req.headers.cookie',
];

export const SECURITY_SCHEMES = {
  ClassicAPIKeyHeader: { type: 'apiKey', in: 'header', name: 'Service-API-Key' },
  APIKeyHeader: { type: 'apiKey', in: 'header', name: 'Platform-AO-API-Key' },
  OAuth2PasswordBearer: { type: 'oauth2', flows: { password: { tokenUrl: '/login', scopes: {} } } },
  HTTPBasic: { type: 'http', scheme: 'basic' },
} as const;

const ROUTER_OPTIONS = { ignoreTrailingSlash: true, maxParamLength: 1024 };

/** Builds the HTTP app over ready services; `logger` may be a pino options object or false. */
export async function buildApp(services: Services, opts: { logger?: object | boolean } = {}): Promise<App> {
  const logger =
    opts.logger === false
      ? false
      : {
          level: services.config.logLevel,
          redact: { paths: SECRET_PATHS, censor: '[redacted]' },
          ...(opts.logger as object),
        };
  const app = Fastify({
    logger,
    bodyLimit: services.config.bodyLimitBytes,
    trustProxy: false,
    // One line per request, with its id (http/request-log.ts), instead of Fastify's two.
    genReqId: requestId,
    logController: new LogController({ disableRequestLogging: true }),
    // Long path parameters reach validation (422) instead of the router's 414.
    routerOptions: ROUTER_OPTIONS,
    // Faults the router answers before any route (bad percent-encoding, a parameter longer than
    // the above) get the same `{detail}` body as every other error.
    frameworkErrors: (err, _req, reply) => {
      const status = (err as { statusCode?: number }).statusCode ?? 400;
      const detail =
        (err as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'A path parameter is longer than 1024 characters'
          : 'The URL is not valid (bad percent-encoding)';
      (reply as FastifyReply).code(status >= 400 && status < 500 ? status : 400).send({ detail });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.decorate('services', services);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(lazySerializerCompiler);
  installErrorHandling(app, installMethodIndex(app, ROUTER_OPTIONS));
  installUnreadBodyDrain(app, Math.max(2 * services.config.bodyLimitBytes, MIN_DISCARD_BYTES));
  // Parses the console's session cookie before the auth hook (installAuth) reads it.
  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Spanbase API',
        version: process.env.npm_package_version ?? '0.1.0',
        description: 'Self-hosted observability logging for LLM applications.',
      },
      components: { securitySchemes: SECURITY_SCHEMES as any },
      security: Object.keys(SECURITY_SCHEMES).map((k) => ({ [k]: [] })),
    },
  });
  installAuth(app);
  installRequestLog(app);
  await registerRoutes(app);
  return app;
}
