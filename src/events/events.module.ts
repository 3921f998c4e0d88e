import { Module } from '@nestjs/common';
import { EventLogRepository } from './event-log.repository';
import { EventStreamService } from './event-stream.service';
import { EventWakeups } from './event-wakeups.service';
import { EventsController } from './events.controller';

@Module({
  controllers: [EventsController],
  providers: [EventLogRepository, EventWakeups, EventStreamService],
  exports: [EventWakeups, EventLogRepository],
})
export class EventsModule {}
