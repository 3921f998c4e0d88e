import { Global, Module } from '@nestjs/common';
import { ApiKeysRepository } from './api-keys.repository';
import { AuthService } from './auth.service';

/** Authentication for the global guard, and the owner of `api_key` for the organizations' routes. */
@Global()
@Module({ providers: [AuthService, ApiKeysRepository], exports: [AuthService, ApiKeysRepository] })
export class AuthModule {}
