import { Global, Module } from '@nestjs/common';
import { ApiKeyExpiriesRepository } from './api-key-expiries.repository';
import { ApiKeyExpiryEvents } from './api-key-expiry-events';
import { ApiKeyRevocations } from './api-key-revocations';
import { ApiKeyUsage } from './api-key-usage';
import { ApiKeysRepository } from './api-keys.repository';
import { AuthService } from './auth.service';
import { CredentialWatch } from './credential-watch.service';
import { OidcModule } from './oidc/oidc.module';
import { RevokedKeyLeases } from './revoked-key-leases';

/** Authentication for the global guard (API keys here, the identity provider's tokens in oidc/), and the owner of `api_key` for the organizations' routes. */
@Global()
@Module({
  imports: [OidcModule],
  providers: [AuthService, ApiKeysRepository, ApiKeyRevocations, ApiKeyUsage, ApiKeyExpiryEvents, ApiKeyExpiriesRepository, CredentialWatch, RevokedKeyLeases],
  exports: [AuthService, ApiKeysRepository, ApiKeyRevocations, ApiKeyUsage, CredentialWatch],
})
export class AuthModule {}
