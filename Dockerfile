# syntax=docker/dockerfile:1
# Two stages: the build stage has the dev dependencies (Nest CLI, SWC, Vite) and compiles src/
# and migrations/ into dist/, with the Builder console's static files in dist/console; the final
# stage has dist/ and the production dependencies only, and runs as the unprivileged `node` user.
ARG NODE_VERSION=20.20

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json .swcrc ./
COPY src ./src
COPY migrations ./migrations
COPY console ./console
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# The embedded database and its generated secrets live in DATA_DIR when DATABASE_URL is unset.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Ready means the database answers: an orchestrator stops sending traffic to a node that lost it.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself, not npm: SIGTERM must reach the server for its graceful stop.
CMD ["node", "dist/src/main.js"]
