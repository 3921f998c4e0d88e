/**
 * Generated from the server's OpenAPI document (GET /api/docs-json) by `npm run console:api`.
 * Do not edit: test/console-api.e2e-spec.ts fails when this file is not what the server documents.
 */

export interface paths {
    "/api/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List agents, by slug */
        get: operations["AgentsController_list"];
        put?: never;
        /** Create an agent with an empty draft */
        post: operations["AgentsController_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read an agent and its draft */
        get: operations["AgentsController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/draft": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Replace the draft
         * @description Only the shape is checked (`400 invalid_request`); a draft may be unpublishable. `draft/validate` says why.
         */
        put: operations["AgentsController_replaceDraft"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/draft/validate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Check whether the draft could be published
         * @description Every problem is listed, each with its `code` and `path`.
         */
        post: operations["VersionsController_validate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/mcp": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Open a server-to-client event stream (not offered)
         * @description The endpoint is stateless: it has nothing to send outside the answer to a request, so it offers no stream. `405` with `Allow: POST`, as MCP specifies.
         */
        get: operations["McpController_stream"];
        put?: never;
        /**
         * Send MCP messages to the agent's MCP server
         * @description A Streamable HTTP endpoint of the Model Context Protocol, served statelessly (no `Mcp-Session-Id`): `initialize`
         *     (the agent's name, the version, and the version's system prompt as `instructions`), `tools/list` (the version's
         *     offered tools, with annotations from their risk) and `tools/call` (through the same executor, guards, records and
         *     audit as `POST /agents/{agentId}/tool-calls`, with entry point `mcp`). Requests are answered as JSON-RPC over
         *     `text/event-stream`; notifications and responses with `202`. A call that needs approval waits up to
         *     `MCP_APPROVAL_WAIT_SECONDS` for a decision, with progress notifications when the request carries a
         *     `progressToken`; still undecided, the result names the approval, and the same call with the same arguments made
         *     again hands over the decision instead of asking again. Errors of the JSON-RPC layer (a malformed message, a
         *     missing `Accept`) are JSON-RPC errors, not problem documents.
         */
        post: operations["McpController_post"];
        /**
         * End an MCP session (there are none)
         * @description The endpoint is stateless: there is no session to end. `405` with `Allow: POST`, as MCP specifies.
         */
        delete: operations["McpController_end"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/publish": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Publish the draft as a new immutable version
         * @description The normalized spec (config defaults filled in) is stored with its hash and the digest of every offered tool. When the normalized draft and every tool digest equal the latest version's, nothing is created and the answer is `200` with that version. The content of an older version is published again as a new version (a rollback).
         */
        post: operations["VersionsController_publish"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/tool-calls": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Call a tool of a published version, through every guard
         * @description Guards, in this order: the version offers the tool (`404 unknown_tool`); its definition is the one pinned at publish
         *     (`409 tool_definition_changed`, also for a tool the version was published with that the code no longer has); the organization holds every scope its capability needs (`403 scope_not_granted`);
         *     the limits capabilities contribute per `runId` (`429 budget_exceeded`; without `runId` no per-run limit applies;
         *     a call that passes the guards counts, whatever it then does); the arguments against the tool's input schema
         *     (`422 invalid_arguments`, paths like `arguments.query`); then the approval gate. Every refusal is audited as
         *     `tool_call.denied` and nothing runs.
         *
         *     A tool that is `mutating` or `destructive`, declares `interruptBefore`, or that the spec's `toolApproval` requires
         *     is not run: the call and its approval are stored, bound to the SHA-256 of the canonical JSON of the validated
         *     arguments, and the answer is `202` with `approvalId`. Otherwise the tool runs with a timeout (`TOOL_TIMEOUT_MS`,
         *     default 30000; its abort signal fires then and the call fails with `error.code` `timeout`). A tool's own failure
         *     is `200` with `status: failed` and `error`. A result over the tool's `maxOutputTokens` (o200k tokens of its JSON
         *     text) is cut to that many tokens, as text, with `resultTruncated: true`; with `offloadLargeResults` the whole
         *     result is kept and `resultRef` names it.
         *
         *     `Idempotency-Key` (1..255 printable ASCII characters, kept 24 hours per organization): the same key with the same
         *     body answers the first answer again (same status and body, header `Idempotent-Replayed: true`) and runs nothing;
         *     another body `422 idempotency_key_reused`; the first request still in progress `409 idempotency_in_progress`.
         *     A request refused before anything was recorded (any 4xx above) does not keep its key.
         */
        post: operations["ToolCallsController_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List published versions, newest first */
        get: operations["VersionsController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a published version, with the drift of its tools since publish */
        get: operations["VersionsController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/versions/{version}/manifest": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Everything a runtime needs: system prompt, offered tools, settings */
        get: operations["VersionsController_manifest"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/{agentId}/versions/{version}/tools": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The tools the model is offered
         * @description Overrides applied; `requiresApproval` includes the spec's `toolApproval`. `format` renders them for a provider. A page at a time like every list, in the order they are offered; the manifest holds them all at once.
         */
        get: operations["VersionsController_tools"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/agents/capabilities": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The capability catalog, sorted by id, a page at a time like every list
         * @description Computed once at boot from the code. For an organization key each item says whether the organization holds every scope it needs (`available`). Answers carry an `ETag`; send it back in `If-None-Match` to get `304` while nothing changed.
         */
        get: operations["CapabilitiesController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List approvals, newest first
         * @description A pending approval past `expiresAt` reads (and filters) as `expired`.
         */
        get: operations["ApprovalsController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/approvals/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read an approval */
        get: operations["ApprovalsController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/approvals/{id}/approve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Approve, and run the call once
         * @description Runs exactly the stored arguments (their hash is checked again first; a mismatch is `409 approval_arguments_changed` and nothing runs), or the `arguments` given here, validated like the model's (`422 invalid_arguments`, the approval stays pending), kept beside the originals, with `argumentsEdited: true` on the call. Of any number of simultaneous approvals exactly one answers `200` and the tool runs once. The guards run again with the organization as it is now: `409 tool_definition_changed` (the code changed or removed the tool since publish), `403 scope_not_granted` refuse and leave the approval pending.
         */
        post: operations["ApprovalsController_approve"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/approvals/{id}/reject": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Reject; the call becomes `rejected`, its error message the reason */
        post: operations["ApprovalsController_reject"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/audit-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The organization's audit log, newest first */
        get: operations["AuditController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/knowledge/collections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List knowledge collections, newest first */
        get: operations["KnowledgeController_listCollections"];
        put?: never;
        /** Create a knowledge collection */
        post: operations["KnowledgeController_createCollection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/knowledge/collections/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a knowledge collection */
        get: operations["KnowledgeController_getCollection"];
        put?: never;
        post?: never;
        /** Delete a knowledge collection and its documents; refused while a published version binds it */
        delete: operations["KnowledgeController_deleteCollection"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/knowledge/collections/{id}/documents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a collection's documents, newest first, without their content */
        get: operations["KnowledgeController_listDocuments"];
        put?: never;
        /** Add a document to a collection; its text is indexed for full-text search */
        post: operations["KnowledgeController_createDocument"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/knowledge/collections/{id}/documents/{docId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a document with its content */
        get: operations["KnowledgeController_getDocument"];
        put?: never;
        post?: never;
        /** Delete a document */
        delete: operations["KnowledgeController_deleteDocument"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who the token belongs to */
        get: operations["MeController_me"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/orgs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List organizations, by slug */
        get: operations["OrgsController_list"];
        put?: never;
        /** Create an organization */
        post: operations["OrgsController_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/orgs/{orgId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read an organization (platform admin, or any key of that organization) */
        get: operations["OrgsController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/orgs/{orgId}/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the organization's API keys (never their tokens) */
        get: operations["OrgsController_listKeys"];
        put?: never;
        /** Create an API key; the answer is the only time its token is shown */
        post: operations["OrgsController_createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/orgs/{orgId}/api-keys/{keyId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke an API key; it is refused from its next request on */
        delete: operations["OrgsController_revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/orgs/{orgId}/scopes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Replace the scopes granted to an organization */
        put: operations["OrgsController_updateScopes"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/skills": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List skills, newest first */
        get: operations["SkillsController_list"];
        put?: never;
        /** Create a skill */
        post: operations["SkillsController_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/skills/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a skill */
        get: operations["SkillsController_get"];
        put?: never;
        post?: never;
        /** Delete a skill; refused while a published version binds it */
        delete: operations["SkillsController_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tool-calls": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the organization's tool calls, newest first
         * @description Filters combine with AND. A pending call whose approval has expired reads (and filters) as `expired`.
         */
        get: operations["ToolCallsController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tool-calls/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a tool call */
        get: operations["ToolCallsController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tool-calls/{id}/result": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read the whole result of a succeeded call
         * @description For a result cut to the output budget, the whole one exists only when the tool offloads large results.
         */
        get: operations["ToolCallsController_result"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers */
        get: operations["HealthController_live"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/health/ready": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: the database answers */
        get: operations["HealthController_ready"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        AgentPage: {
            items: components["schemas"]["AgentView"][];
            nextCursor: string | null;
        };
        AgentResourcesDto: {
            /** @description Knowledge collection ids of this organization. */
            knowledgeCollections?: string[];
            /** @description Skill ids of this organization. */
            skills?: string[];
        };
        AgentSpecDto: {
            /** @description Each id at most once (checked at publish); order is kept. */
            capabilities: components["schemas"]["CapabilityRefDto"][];
            /** @description Markdown; the start of the system prompt. */
            instructions: string;
            resources?: components["schemas"]["AgentResourcesDto"];
            /**
             * @description Per tool id: `"required"` makes a tool ask for approval. Never looser than the default.
             * @example {
             *       "search_documents": "required"
             *     }
             */
            toolApproval?: {
                [key: string]: "required";
            };
            /** @description Per tool id: the name and description the model sees. */
            toolOverrides?: {
                [key: string]: components["schemas"]["ToolOverrideDto"];
            };
        };
        AgentSpecView: {
            capabilities: components["schemas"]["CapabilityRefDto"][];
            instructions: string;
            resources?: components["schemas"]["AgentResourcesDto"];
            toolApproval?: {
                [key: string]: "required";
            };
            toolOverrides?: {
                [key: string]: components["schemas"]["ToolOverrideDto"];
            };
        };
        AgentVersionPage: {
            items: components["schemas"]["AgentVersionView"][];
            nextCursor: string | null;
        };
        AgentVersionView: {
            /** Format: uuid */
            agentId: string;
            drift: components["schemas"]["DriftView"][];
            /** Format: date-time */
            publishedAt: string;
            /** @description The id of the API key that published it. */
            publishedBy: string;
            /** @description The normalized spec: every capability's config with its defaults filled in. */
            spec: components["schemas"]["AgentSpecView"];
            /** @description SHA-256 hex of the RFC 8785 canonical JSON of `spec`. */
            specHash: string;
            /** @description Per offered tool name: the SHA-256 of its definition (name, description, input schema, risk, approval) at publish. */
            toolDigests: {
                [key: string]: string;
            };
            version: number;
        };
        AgentView: {
            /** Format: date-time */
            createdAt: string;
            description: string | null;
            draft: components["schemas"]["AgentSpecView"];
            /** Format: uuid */
            id: string;
            /** @description The newest published version; null before the first publish. */
            latestVersion: number | null;
            name: string;
            slug: string;
            /** Format: date-time */
            updatedAt: string;
        };
        AnthropicToolView: {
            description: string;
            /** @description JSON Schema of the arguments, without `$schema`. */
            input_schema: {
                [key: string]: unknown;
            };
            name: string;
        };
        ApiKeyPage: {
            items: components["schemas"]["ApiKeyView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        ApiKeyView: {
            /** Format: date-time */
            createdAt: string;
            /** Format: uuid */
            id: string;
            name: string;
            /** Format: date-time */
            revokedAt?: Record<string, never> | null;
            roles: ("viewer" | "builder" | "agent" | "approver" | "admin")[];
            /** @description The first characters of the token, to recognize it. */
            tokenPrefix: string;
        };
        ApprovalDecisionView: {
            approval: components["schemas"]["ApprovalView"];
            toolCall: components["schemas"]["ToolCallView"];
        };
        ApprovalPage: {
            items: components["schemas"]["ApprovalView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        ApprovalView: {
            /** Format: uuid */
            agentId: string;
            approvedArguments?: {
                [key: string]: unknown;
            };
            approvedArgumentsHash?: string;
            arguments: {
                [key: string]: unknown;
            };
            argumentsHash: string;
            capabilityId: string;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            decidedAt?: string;
            /** Format: uuid */
            decidedBy?: string;
            /** Format: date-time */
            expiresAt: string;
            /** Format: uuid */
            id: string;
            /** @description The approver's note, or the rejection reason. */
            note?: string;
            /** @enum {string} */
            reason: "side_effecting" | "interrupt_before" | "spec_required";
            /** Format: uuid */
            requestedBy: string;
            /** @enum {string} */
            status: "pending" | "approved" | "rejected" | "expired";
            tool: string;
            /** Format: uuid */
            toolCallId: string;
            toolId: string;
            version: number;
        };
        ApproveDto: {
            /** @description Run with these arguments instead of the requested ones. Validated like the model's; kept beside the originals. */
            arguments?: {
                [key: string]: unknown;
            };
            note?: string;
        };
        AuditEventPage: {
            items: components["schemas"]["AuditEventView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        AuditEventView: {
            /** @description Who acted. */
            actor: components["schemas"]["AuditPartyView"];
            /** Format: date-time */
            at: string;
            /** @description Facts of the event; their names depend on `type`. */
            data: {
                [key: string]: unknown;
            };
            /** Format: uuid */
            id: string;
            /** Format: uuid */
            orgId: string | null;
            /** @description What the event is about. */
            target: components["schemas"]["AuditPartyView"];
            /** @enum {string} */
            type: "org.created" | "org.scopes_updated" | "api_key.created" | "api_key.revoked" | "agent.created" | "agent.published" | "tool_call.requested" | "tool_call.denied" | "tool_call.succeeded" | "tool_call.failed" | "approval.requested" | "approval.approved" | "approval.rejected" | "approval.expired";
        };
        AuditPartyView: {
            id: string;
            /**
             * @description `platform`, `api_key` or `system` for an actor; the kind of object for a target (`org`, `api_key`, `agent`, `tool_call`, `approval`).
             * @example api_key
             */
            type: string;
        };
        CapabilityDescriptorView: {
            /** @description For an organization key: every scope the capability needs is granted. Absent for the platform admin. */
            available?: boolean;
            category: string;
            /** @description JSON Schema (draft 2020-12) of the config object; every optional field has a default. Forms read `x-enum-labels` beside an `enum` and `x-multiline` on Markdown strings. */
            configSchema: {
                [key: string]: unknown;
            };
            description: string;
            id: string;
            name: string;
            /** @description Empty: applies to every profile. */
            profiles: string[];
            promptGuidance: string;
            /**
             * @description The highest risk of its tools; read_only without tools.
             * @enum {string}
             */
            risk: "read_only" | "mutating" | "destructive";
            /** @description Organization scopes the capability needs. */
            scopes: string[];
            /** @description True iff any tool's risk is not read_only. */
            sideEffecting: boolean;
            tags: string[];
            tools: components["schemas"]["ToolDescriptorView"][];
            /** @description Empty: applies to every worker type. */
            workerTypes: string[];
        };
        CapabilityListView: {
            items: components["schemas"]["CapabilityDescriptorView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        CapabilityRefDto: {
            /** @description The capability's config (its `configSchema` in the catalog); checked at validate and publish. */
            config?: {
                [key: string]: unknown;
            };
            /**
             * @description A capability id from the catalog.
             * @example clock
             */
            id: string;
        };
        CollectionPage: {
            items: components["schemas"]["CollectionView"][];
            nextCursor: string | null;
        };
        CollectionView: {
            /** Format: date-time */
            createdAt: string;
            description: string | null;
            /** @description How many documents the collection holds. */
            documentCount: number;
            /** Format: uuid */
            id: string;
            name: string;
            /** Format: date-time */
            updatedAt: string;
        };
        CreateAgentDto: {
            description?: string;
            /** @example Support bot */
            name: string;
            /**
             * @description Unique within the organization.
             * @example support-bot
             */
            slug: string;
        };
        CreateApiKeyDto: {
            /** @example support-bot runtime */
            name: string;
            roles: ("viewer" | "builder" | "agent" | "approver" | "admin")[];
        };
        CreateCollectionDto: {
            /** @description What the collection holds; a capability may show it to the model. */
            description?: string;
            /** @example Product handbook */
            name: string;
        };
        CreatedApiKeyView: {
            /** Format: date-time */
            createdAt: string;
            /** Format: uuid */
            id: string;
            name: string;
            /** Format: date-time */
            revokedAt?: Record<string, never> | null;
            roles: ("viewer" | "builder" | "agent" | "approver" | "admin")[];
            /** @description Shown only in this answer; store it now. */
            token: string;
            /** @description The first characters of the token, to recognize it. */
            tokenPrefix: string;
        };
        CreateDocumentDto: {
            /** @description The text, indexed for full-text search. */
            content: string;
            /** @description Free-form JSON object kept with the document. */
            metadata?: {
                [key: string]: unknown;
            };
            /** @example Refund policy */
            title: string;
        };
        CreateOrgDto: {
            /** @example Acme Corp */
            name: string;
            /**
             * @example [
             *       "knowledge:read"
             *     ]
             */
            scopes?: string[];
            /** @example acme */
            slug: string;
        };
        CreateSkillDto: {
            /** @description When the skill applies; a capability may show it to the model. */
            description: string;
            /** @description Markdown: how to carry the skill out. */
            instructions: string;
            /** @example Refund triage */
            name: string;
        };
        CreateToolCallDto: {
            /** @description Validated against the tool's input schema. */
            arguments: {
                [key: string]: unknown;
            };
            /** @description Groups calls of one agent run; limits contributed by capabilities count per run. */
            runId?: string;
            /**
             * @description The name of a tool the version offers (after overrides).
             * @example search_knowledge
             */
            tool: string;
            /** @description Default: the latest published version. */
            version?: number | "latest";
        };
        DocumentPage: {
            items: components["schemas"]["DocumentSummaryView"][];
            nextCursor: string | null;
        };
        DocumentSummaryView: {
            /** Format: uuid */
            collectionId: string;
            /** @description Length of the content in characters. */
            contentLength: number;
            /** Format: date-time */
            createdAt: string;
            /** Format: uuid */
            id: string;
            metadata: {
                [key: string]: unknown;
            };
            title: string;
        };
        DocumentView: {
            /** Format: uuid */
            collectionId: string;
            content: string;
            /** @description Length of the content in characters. */
            contentLength: number;
            /** Format: date-time */
            createdAt: string;
            /** Format: uuid */
            id: string;
            metadata: {
                [key: string]: unknown;
            };
            title: string;
        };
        DriftView: {
            /**
             * @description `changed`: its definition differs from the pinned digest; `removed`: the code no longer offers it; `added`: offered now but never pinned. Calls to it are refused with `409 tool_definition_changed` until the agent is published again.
             * @enum {string}
             */
            reason: "changed" | "removed" | "added";
            /** @description The offered tool name. */
            tool: string;
        };
        LivenessView: {
            /** @enum {string} */
            status: "ok";
        };
        ManifestView: {
            /** Format: uuid */
            agentId: string;
            /** @description What capabilities contribute besides tools (settings, limits), keyed by capability id. */
            settings: {
                [key: string]: unknown;
            };
            /** @description The instructions, then the prompt guidance of each contributing capability, in spec order. */
            systemPrompt: string;
            tools: components["schemas"]["OfferedToolView"][];
            version: number;
        };
        MeView: {
            /** @description `platform` for the platform admin; the API key's id otherwise. */
            id: string;
            /**
             * Format: uuid
             * @description The key's organization; absent for the platform admin.
             */
            orgId?: string;
            /** @description The key's roles; absent for the platform admin. */
            roles?: ("viewer" | "builder" | "agent" | "approver" | "admin")[];
            /** @enum {string} */
            type: "platform" | "api_key";
        };
        OfferedToolPage: {
            /** @description `OfferedTool[]` by default; `OpenAiTool[]` with `format=openai`; `AnthropicTool[]` with `format=anthropic`. */
            items: (components["schemas"]["OfferedToolView"] | components["schemas"]["OpenAiToolView"] | components["schemas"]["AnthropicToolView"])[];
            /** @description Pass as `cursor` for the next page; null on the last one. The manifest holds every tool at once. */
            nextCursor: string | null;
        };
        OfferedToolView: {
            capabilityId: string;
            description: string;
            /** @description JSON Schema of the arguments. */
            inputSchema: {
                [key: string]: unknown;
            };
            /** @description The name the model calls; an override's name when one is set. */
            name: string;
            /** @description risk is not read_only, interruptBefore, or the spec's toolApproval says required. */
            requiresApproval: boolean;
            /** @enum {string} */
            risk: "read_only" | "mutating" | "destructive";
            toolId: string;
        };
        OpenAiFunctionView: {
            description: string;
            name: string;
            /** @description JSON Schema of the arguments, without `$schema`. */
            parameters: {
                [key: string]: unknown;
            };
        };
        OpenAiToolView: {
            function: components["schemas"]["OpenAiFunctionView"];
            /** @enum {string} */
            type: "function";
        };
        OrgPage: {
            items: components["schemas"]["OrgView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        OrgView: {
            /** Format: date-time */
            createdAt: string;
            /** Format: uuid */
            id: string;
            name: string;
            scopes: string[];
            slug: string;
        };
        Problem: {
            /** @description Stable snake_case error code; branch on this. */
            code: string;
            detail: string;
            errors?: {
                code?: string;
                message: string;
                path: string;
            }[];
            instance?: string;
            status: number;
            title: string;
            type: string;
        };
        ReadinessView: {
            /**
             * @description Every check, by name.
             * @example {
             *       "database": {
             *         "status": "up"
             *       }
             *     }
             */
            details: {
                [key: string]: {
                    /** @enum {string} */
                    status: "up" | "down";
                } & {
                    [key: string]: unknown;
                };
            };
            /**
             * @description The checks that failed, by name: empty in a 200.
             * @example {}
             */
            error: {
                [key: string]: {
                    /** @enum {string} */
                    status: "up" | "down";
                } & {
                    [key: string]: unknown;
                };
            };
            /**
             * @description The checks that passed, by name.
             * @example {
             *       "database": {
             *         "status": "up"
             *       }
             *     }
             */
            info: {
                [key: string]: {
                    /** @enum {string} */
                    status: "up" | "down";
                } & {
                    [key: string]: unknown;
                };
            };
            /** @enum {string} */
            status: "ok";
        };
        RejectDto: {
            /** @description Why; shown to the agent as the call's error message. */
            reason: string;
        };
        SkillPage: {
            items: components["schemas"]["SkillView"][];
            nextCursor: string | null;
        };
        SkillView: {
            /** Format: date-time */
            createdAt: string;
            description: string;
            /** Format: uuid */
            id: string;
            instructions: string;
            name: string;
        };
        SpecErrorView: {
            /** @enum {string} */
            code: "unknown_capability" | "duplicate_capability" | "invalid_config" | "scope_not_granted" | "unknown_tool" | "invalid_tool_name" | "duplicate_tool_name" | "unknown_resource";
            message: string;
            /** @example capabilities[0].config.units */
            path: string;
        };
        ToolCallErrorView: {
            /** @description A tool's own code, or `timeout`, `tool_error`, `interrupted`, `invalid_result`, `result_too_large`, `approval_rejected`, `approval_expired`. */
            code: string;
            message: string;
        };
        ToolCallPage: {
            items: components["schemas"]["ToolCallView"][];
            /** @description Pass as `cursor` for the next page; null on the last one. */
            nextCursor: string | null;
        };
        ToolCallResultView: {
            /** @description The whole result, never cut. */
            result: Record<string, never>;
            /** Format: uuid */
            toolCallId: string;
        };
        ToolCallView: {
            /** Format: uuid */
            agentId: string;
            /** Format: uuid */
            approvalId?: string;
            /** @description The validated arguments (defaults applied), as requested. */
            arguments: {
                [key: string]: unknown;
            };
            /** @description True when an approver edited the arguments: `executedArguments` is what ran. */
            argumentsEdited: boolean;
            /** @description SHA-256 hex of the RFC 8785 canonical JSON of `arguments`. */
            argumentsHash: string;
            capabilityId: string;
            /** Format: date-time */
            completedAt: string | null;
            /** Format: date-time */
            createdAt: string;
            /**
             * @description How the call arrived.
             * @enum {string}
             */
            entryPoint: "rest" | "mcp" | "run";
            error?: components["schemas"]["ToolCallErrorView"];
            executedArguments?: {
                [key: string]: unknown;
            };
            executedArgumentsHash?: string;
            /** Format: uuid */
            id: string;
            /**
             * Format: uuid
             * @description The API key that requested the call.
             */
            requestedBy: string;
            /** @description When succeeded. When cut, the first `maxOutputTokens` tokens of the result's JSON text. */
            result?: Record<string, never>;
            /**
             * @description Names the whole result kept for a cut one (`GET` it).
             * @example /api/v1/tool-calls/{id}/result
             */
            resultRef?: string;
            resultTruncated?: boolean;
            runId: string | null;
            /** @enum {string} */
            status: "pending_approval" | "running" | "succeeded" | "failed" | "rejected" | "expired";
            /** @description The offered name the call used. */
            tool: string;
            toolId: string;
            version: number;
        };
        ToolDescriptorView: {
            /** @description What the model reads to decide when to use the tool. */
            description: string;
            id: string;
            /** @description JSON Schema (draft 2020-12) of the arguments. */
            inputSchema: {
                [key: string]: unknown;
            };
            interruptBefore: boolean;
            /** @description 0 = no limit. */
            maxOutputTokens: number;
            offloadLargeResults: boolean;
            /** @description `risk` is not read_only, or `interruptBefore`. */
            requiresApproval: boolean;
            /** @enum {string} */
            risk: "read_only" | "mutating" | "destructive";
        };
        ToolOverrideDto: {
            /** @description The description the model sees instead of the declared one. */
            description?: string;
            /** @description The name the model sees instead of the tool id; `^[a-zA-Z][a-zA-Z0-9_-]{0,63}$` is checked at publish. */
            name?: string;
        };
        UpdateScopesDto: {
            scopes: string[];
        };
        ValidationResultView: {
            errors: components["schemas"]["SpecErrorView"][];
            /** @description True when the draft can be published. */
            valid: boolean;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    AgentsController_list: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    AgentsController_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateAgentDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The slug is taken in this organization (`conflict`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    AgentsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    AgentsController_replaceDraft: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentSpecDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_validate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationResultView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    McpController_stream: {
        parameters: {
            query?: {
                /** @description Pins a published version. Default: the latest one, looked up again on every request. */
                version?: number;
            };
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `version` is not a positive integer, or the query names something unknown (`invalid_request`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in this organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not offered by a stateless endpoint (`method_not_allowed`). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    McpController_post: {
        parameters: {
            query?: {
                /** @description Pins a published version. Default: the latest one, looked up again on every request. */
                version?: number;
            };
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        /** @description One JSON-RPC 2.0 message, or a batch of them. */
        requestBody: {
            content: {
                "application/json": Record<string, never> | Record<string, never>[];
            };
        };
        responses: {
            /** @description The JSON-RPC responses (and progress notifications) as server-sent events. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Only notifications or responses were sent; nothing to answer. */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `version` is not a positive integer, or the query names something unknown (`invalid_request`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in this organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    McpController_end: {
        parameters: {
            query?: {
                /** @description Pins a published version. Default: the latest one, looked up again on every request. */
                version?: number;
            };
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `version` is not a positive integer, or the query names something unknown (`invalid_request`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in this organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No sessions on a stateless endpoint (`method_not_allowed`). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_publish: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Nothing changed: the latest version. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentVersionView"];
                };
            };
            /** @description A new version. */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentVersionView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The draft cannot be published (`spec_invalid`); `errors[]` lists every problem with its `code` and `path`. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ToolCallsController_create: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1..255 printable ASCII characters. */
                "Idempotency-Key"?: string;
            };
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateToolCallDto"];
            };
        };
        responses: {
            /** @description It ran: `succeeded`, or `failed` with `error`. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolCallView"];
                };
            };
            /** @description It waits for approval: `pending_approval` with `approvalId`; nothing ran. */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolCallView"];
                };
            };
            /** @description The body or the Idempotency-Key header is malformed (`invalid_request`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /**
             * @description `forbidden` (role), or `scope_not_granted` (the organization lost a scope the capability needs).
             *
             *     The token's roles do not allow this action (`forbidden`).
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent or version (`not_found`), or the version offers no such tool (`unknown_tool`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_published`, `tool_definition_changed` or `idempotency_in_progress`. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `invalid_arguments` with `errors[]`, or `idempotency_key_reused`. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A per-run limit contributed by a capability is reached (`budget_exceeded`). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_list: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                agentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentVersionPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
                /** @description A version number, or `latest`. */
                version: number | "latest";
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentVersionView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_manifest: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agentId: string;
                /** @description A version number, or `latest`. */
                version: number | "latest";
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ManifestView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /**
             * @description The role does not allow it (`forbidden`), or the organization no longer holds a scope a contributing capability needs (`scope_not_granted`); `missingScopes` names them.
             *
             *     The token's roles do not allow this action (`forbidden`).
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    VersionsController_tools: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                /** @description Render the tools in a provider's function-calling shape, to paste in unchanged. */
                format?: "openai" | "anthropic";
                limit?: number;
            };
            header?: never;
            path: {
                agentId: string;
                /** @description A version number, or `latest`. */
                version: number | "latest";
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OfferedToolPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /**
             * @description The role does not allow it (`forbidden`), or the organization no longer holds a scope a contributing capability needs (`scope_not_granted`); `missingScopes` names them.
             *
             *     The token's roles do not allow this action (`forbidden`).
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such agent in your organization, or no such version (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The agent has no published version (`not_published`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    CapabilitiesController_list: {
        parameters: {
            query?: {
                /** @description Only capabilities of this category. */
                category?: string;
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
                /** @description Only capabilities that apply to this profile (an empty `profiles` applies to all). */
                profile?: string;
                /** @description Only capabilities whose risk (the highest of their tools) is exactly this. */
                risk?: "read_only" | "mutating" | "destructive";
                /** @description Only capabilities carrying this tag. */
                tag?: string;
                /** @description Only capabilities that apply to this worker type (an empty `workerTypes` applies to all). */
                workerType?: string;
            };
            header?: {
                /** @description An ETag from an earlier answer. */
                "If-None-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    /** @description Identifies this answer (it differs per organization because of `available`). */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CapabilityListView"];
                };
            };
            /** @description Not modified: the answer would equal the one named by `If-None-Match`. */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An unknown filter, or a bad filter value (`invalid_request`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ApprovalsController_list: {
        parameters: {
            query?: {
                agentId?: string;
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
                status?: "pending" | "approved" | "rejected" | "expired";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ApprovalsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such approval in this organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ApprovalsController_approve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ApproveDto"];
            };
        };
        responses: {
            /** @description The approval, and the call as it ran (`succeeded` or `failed`). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalDecisionView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /**
             * @description `forbidden` (role), the key that requested the call (`self_approval_forbidden`), or the organization no longer holds a scope the tool needs (`scope_not_granted`).
             *
             *     The token's roles do not allow this action (`forbidden`).
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such approval in this organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Decided already (`approval_already_decided`); past `expiresAt` (`approval_expired`; it reads `expired` from then on); the tool's definition changed or the code removed it since publish (`tool_definition_changed`); the stored arguments no longer match the approval's hash (`approval_arguments_changed`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Edited arguments break the tool's input schema (`invalid_arguments`). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ApprovalsController_reject: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RejectDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalDecisionView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /**
             * @description `forbidden` (role), or the key that requested the call (`self_approval_forbidden`).
             *
             *     The token's roles do not allow this action (`forbidden`).
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such approval in this organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Decided already (`approval_already_decided`), or past `expiresAt` (`approval_expired`; it reads `expired` from then on). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    AuditController_list: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
                /** @description Only events at or after this instant: `YYYY-MM-DD`, or a date and time with an optional offset (UTC without one). */
                since?: string;
                type?: "org.created" | "org.scopes_updated" | "api_key.created" | "api_key.revoked" | "agent.created" | "agent.published" | "tool_call.requested" | "tool_call.denied" | "tool_call.succeeded" | "tool_call.failed" | "approval.requested" | "approval.approved" | "approval.rejected" | "approval.expired";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditEventPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_listCollections: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CollectionPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_createCollection: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateCollectionDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CollectionView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_getCollection: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CollectionView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_deleteCollection: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A published agent version binds the collection (`resource_in_use`; `boundBy` lists them). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_listDocuments: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DocumentPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_createDocument: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateDocumentDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DocumentView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_getDocument: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                docId: string;
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DocumentView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    KnowledgeController_deleteDocument: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                docId: string;
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such collection or document in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    MeController_me: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MeView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_list: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateOrgDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The slug is taken (`conflict`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                orgId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such organization, or not yours (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_listKeys: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                orgId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such organization, or not yours (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_createKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                orgId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateApiKeyDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedApiKeyView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such organization, or not yours (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_revokeKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                keyId: string;
                orgId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such key in this organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    OrgsController_updateScopes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                orgId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateScopesDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    SkillsController_list: {
        parameters: {
            query?: {
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SkillPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    SkillsController_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSkillDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SkillView"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is larger than 1 MiB (`payload_too_large`). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    SkillsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SkillView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such skill in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    SkillsController_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such skill in your organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A published agent version binds the skill (`resource_in_use`; `boundBy` lists them). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ToolCallsController_list: {
        parameters: {
            query?: {
                agentId?: string;
                /** @description Opaque cursor from a previous page's `nextCursor`. */
                cursor?: string;
                limit?: number;
                runId?: string;
                status?: "pending_approval" | "running" | "succeeded" | "failed" | "rejected" | "expired";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolCallPage"];
                };
            };
            /** @description The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ToolCallsController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolCallView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such tool call in this organization (`not_found`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    ToolCallsController_result: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolCallResultView"];
                };
            };
            /** @description Missing, unknown or revoked token (`unauthorized`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token's roles do not allow this action (`forbidden`). */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such tool call (`not_found`), or it has no whole result: not succeeded, or cut without offloading (`result_not_available`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    HealthController_live: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LivenessView"];
                };
            };
        };
    };
    HealthController_ready: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReadinessView"];
                };
            };
            /** @description The database does not answer (`service_unavailable`); `checks` names what is down. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
