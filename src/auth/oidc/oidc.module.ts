import { Global, Module } from '@nestjs/common';
import { OidcAuthenticator } from './oidc-authenticator.service';
import { OidcOrgsRepository } from './oidc-orgs.repository';
import { PeopleRepository } from './people.repository';
import { ProtectedResourceController } from './protected-resource.controller';
import { ResourceChallenge } from './resource-challenge.service';

/** Sign-in through the organization's identity provider, for the global guard; and the MCP endpoints' RFC 9728 metadata. */
@Global()
@Module({
  controllers: [ProtectedResourceController],
  providers: [OidcAuthenticator, OidcOrgsRepository, PeopleRepository, ResourceChallenge],
  exports: [OidcAuthenticator, ResourceChallenge],
})
export class OidcModule {}
