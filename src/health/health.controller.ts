import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { PublicRoute } from '../auth/access.decorator';
import { ApiError } from '../common/api-error';
import { ProblemResponse } from '../common/openapi';
import { LivenessView, ReadinessView } from './health.dto';

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
  ) {}

  @Get()
  @PublicRoute()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ApiOkResponse({ type: LivenessView })
  live(): LivenessView {
    return { status: 'ok' };
  }

  /** The ping in flight: every probe arriving meanwhile is answered by it rather than pinging too. */
  private ping?: Promise<HealthCheckResult | undefined>;

  @Get('ready')
  @PublicRoute()
  // Not cached; documented here rather than by terminus, whose 503 is not our problem document.
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({
    summary: 'Readiness: the database answers',
    description: 'Probes that arrive while a ping of the database is under way are answered by that ping: the database sees one at a time.',
  })
  @ApiOkResponse({ type: ReadinessView })
  @ApiServiceUnavailableResponse(ProblemResponse('The database does not answer (`service_unavailable`); `checks` names what is down.'))
  async ready(): Promise<HealthCheckResult> {
    // The route is public and not rate limited, and each ping holds one of the pool's connections:
    // 200 anonymous probes at once queued every organization's queries behind theirs (attack
    // round 11, G-F2). One ping at a time answers them all, no older than the ping.
    this.ping ??= this.health
      .check([() => this.db.pingCheck('database', { timeout: 2000 })])
      // Terminus throws a 503 whose body holds the driver's error message; the answer names only
      // what is down (the log of the failed request has the rest).
      .catch(() => undefined)
      .finally(() => (this.ping = undefined));
    const result = await this.ping;
    if (!result) throw new ApiError('service_unavailable', 'The database does not answer.', undefined, { checks: { database: 'down' } });
    return result;
  }
}
