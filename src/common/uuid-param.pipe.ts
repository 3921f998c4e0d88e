import { Injectable, PipeTransform } from '@nestjs/common';
import { ApiError } from './api-error';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** A path id that is not a UUID names nothing that exists: the same 404 as a missing one. */
@Injectable()
export class UuidParam implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isUuid(value)) throw ApiError.notFound();
    return value.toLowerCase();
  }
}
