import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { PublicRoute } from '../auth/access.decorator';
import { ApiError } from '../common/api-error';
import { ProblemResponse } from '../common/openapi';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { RateLimiter } from '../rate-limit/rate-limiter.service';
import { Metrics } from './metrics';

/**
 * Prometheus scrape endpoint, outside /api/v1: it is the operator's, not the product's API. Public
 * to the auth guard (a scraper holds no API key); with METRICS_TOKEN set it answers only
 * `Authorization: Bearer <METRICS_TOKEN>`.
 */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  private readonly tokenDigest?: Buffer;

  constructor(
    private readonly metrics: Metrics,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    if (config.metricsToken) this.tokenDigest = digest(config.metricsToken);
  }

  @Get()
  @PublicRoute()
  @ApiOperation({ summary: 'Prometheus metrics (text exposition format); see docs/operations.md' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4.', schema: { type: 'string' } })
  @ApiUnauthorizedResponse(ProblemResponse('METRICS_TOKEN is set and the request does not carry it (`unauthorized`).'))
  async scrape(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (this.tokenDigest) {
      const match = /^Bearer\s+(\S{1,512})\s*$/i.exec(request.headers.authorization ?? '');
      // Digests of equal length, so the comparison takes the same time whatever was sent.
      if (!match || !timingSafeEqual(digest(match[1]), this.tokenDigest)) {
        // Guessing the metrics token counts against the address like guessing an API key.
        await this.limiter.recordAuthFailure(request.ip);
        throw ApiError.unauthorized();
      }
    }
    void reply.header('content-type', this.metrics.contentType).header('cache-control', 'no-store');
    return this.metrics.scrape();
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
