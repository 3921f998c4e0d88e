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
  private readonly reuseMs: number;
  /** The serialization under way, which every scrape arriving meanwhile is answered with. */
  private serializing?: Promise<Buffer>;
  /** The last text serialized, and when (Date.now()). */
  private made?: { text: Buffer; at: number };

  constructor(
    private readonly metrics: Metrics,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.token = config.metricsToken || undefined;
    this.reuseMs = config.metricsReuseMs ?? 0;
  }

  @Get()
  @PublicRoute()
  @ApiOperation({ summary: 'Prometheus metrics (text exposition format); see docs/operations.md' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4.', schema: { type: 'string' } })
  @ApiUnauthorizedResponse(ProblemResponse('METRICS_TOKEN is set and the request does not carry it (`unauthorized`).'))
  async scrape(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
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
    return this.text();
  }

  /**
   * The exposition, serialized at most once at a time and reused for `METRICS_REUSE_MS`: any key
   * holder grows the registry towards its bound (every route, method and status: 300 KB, 8.5 ms of
   * the event loop a scrape), and 20 connections scraping an open /metrics took another
   * organization's requests from 3 ms to 745 ms (attack round 11, G-F4). Scrapers come every 15 s
   * or so; a text a second old tells them the same. Kept as bytes: encoding 300 KB for each answer
   * cost more than sending it.
   */
  private text(): Promise<Buffer> {
    if (this.made && Date.now() - this.made.at < this.reuseMs) return Promise.resolve(this.made.text);
    this.serializing ??= this.metrics
      .scrape()
      .then((text) => {
        this.made = { text: Buffer.from(text), at: Date.now() };
        return this.made.text;
      })
      .finally(() => (this.serializing = undefined));
    return this.serializing;
  }
}
