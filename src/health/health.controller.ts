import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { PublicRoute } from '../auth/access.decorator';
import { ProblemResponse } from '../common/openapi';

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
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } } })
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  @PublicRoute()
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: the database answers' })
  @ApiServiceUnavailableResponse(ProblemResponse('The database does not answer (`service_unavailable`).'))
  ready() {
    return this.health.check([() => this.db.pingCheck('database', { timeout: 2000 })]);
  }
}
