import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PublicRoute } from '../auth/access.decorator';
import { tokensEqual } from '../auth/tokens';
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
  private readonly token?: string;

  constructor(
    private readonly metrics: Metrics,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.token = config.metricsToken || undefined;
  }

  @Get()
  @PublicRoute()
  @ApiOperation({ summary: 'Prometheus metrics (text exposition format); see docs/operations.md' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4.', schema: { type: 'string' } })
  @ApiUnauthorizedResponse(ProblemResponse('METRICS_TOKEN is set and the request does not carry it (`unauthorized`).'))
  async scrape(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (this.token) {
      const match = /^Bearer\s+(\S{1,512})\s*$/i.exec(request.headers.authorization ?? '');
      // Compared by digest, so the comparison takes the same time whatever was sent.
      if (!match || !tokensEqual(match[1], this.token)) {
        // Guessing the metrics token counts against the address like guessing an API key.
        await this.limiter.recordAuthFailure(request.ip);
        throw ApiError.unauthorized();
      }
    }
    void reply.header('content-type', this.metrics.contentType).header('cache-control', 'no-store');
    return this.metrics.scrape();
  }
}
