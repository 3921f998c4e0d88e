import { Injectable, PipeTransform } from '@nestjs/common';
import { ApiError } from '../common/api-error';

/** `latest`, or a version number; anything else names no version (404, like a missing one). */
@Injectable()
export class VersionParam implements PipeTransform<string, number | 'latest'> {
  transform(value: string): number | 'latest' {
    if (value === 'latest') return 'latest';
    if (!/^[1-9][0-9]{0,8}$/.test(value)) throw ApiError.notFound('agent version');
    return Number(value);
  }
}
