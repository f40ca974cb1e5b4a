import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import express from 'express';
import { createApiDocsRouter, swaggerUiDirectory } from '../../src/http/api-docs-router';
import { createErrorHandler } from '../../src/http/error-handler';

const ASSETS = ['swagger-ui-bundle.js', 'swagger-ui-bundle.js.map', 'swagger-ui.css', 'swagger-ui.css.map', 'favicon-32x32.png'];

describe('createApiDocsRouter', () => {
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'api-docs-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it("finds the installed swagger-ui-dist's files", () => {
    expect(() => createApiDocsRouter()).to.not.throw();
    expect(swaggerUiDirectory()).to.match(/[/\\]node_modules[/\\]swagger-ui-dist$/);
  });

  it('fails at creation, naming the file, when an asset the page needs is missing', () => {
    copyFileSync(join(swaggerUiDirectory(), 'package.json'), join(directory, 'package.json'));
    for (const name of ASSETS.slice(0, -1)) writeFileSync(join(directory, name), '');
    expect(() => createApiDocsRouter({ assetDirectory: directory })).to.throw(`API docs asset missing: ${join(directory, 'favicon-32x32.png')}`);
    writeFileSync(join(directory, 'favicon-32x32.png'), '');
    expect(() => createApiDocsRouter({ assetDirectory: directory })).to.not.throw();
  });

  it('answers a 500, and reports it, when an asset goes missing after start-up', async () => {
    copyFileSync(join(swaggerUiDirectory(), 'package.json'), join(directory, 'package.json'));
    for (const name of ASSETS) writeFileSync(join(directory, name), 'x');
    const reported: unknown[] = [];
    const app = express();
    app.use(createApiDocsRouter({ assetDirectory: directory }));
    app.use(createErrorHandler((error) => reported.push(error)));
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const version = (JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { version: string }).version;
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/docs/swagger-ui-${version}/swagger-ui.css`;
      expect((await fetch(url)).status).to.equal(200);
      rmSync(join(directory, 'swagger-ui.css'));
      const response = await fetch(url);
      expect(response.status).to.equal(500);
      expect(await response.json()).to.deep.equal({ code: 'internal', message: 'internal error', status: 500 });
      expect(reported).to.have.length(1);
      expect(String(reported[0])).to.include('API docs asset unreadable');
    } finally {
      server.close();
    }
  });
});
