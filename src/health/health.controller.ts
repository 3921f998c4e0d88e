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

  @Get('ready')
  @PublicRoute()
  // Not cached; documented here rather than by terminus, whose 503 is not our problem document.
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({ summary: 'Readiness: the database answers' })
  @ApiOkResponse({ type: ReadinessView })
  @ApiServiceUnavailableResponse(ProblemResponse('The database does not answer (`service_unavailable`); `checks` names what is down.'))
  async ready(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([() => this.db.pingCheck('database', { timeout: 2000 })]);
    } catch {
      // Terminus throws a 503 whose body holds the driver's error message; the answer names only
      // what is down (the log of the failed request has the rest).
      throw new ApiError('service_unavailable', 'The database does not answer.', undefined, { checks: { database: 'down' } });
    }
  }
}
