// The API page: Swagger UI over the OpenAPI documents this host serves (v1 and v2).
// Use "Authorize" to give it an API key; it is kept in this tab only and sent as a bearer token.
"use strict";
window.ui = SwaggerUIBundle({
  urls: [
    { url: "/v1/openapi.json", name: "OpenWOP v1 (and AG-UI, LangGraph, MCP, A2A)" },
    { url: "/openapi.json", name: "OpenWOP v2" },
  ],
  "urls.primaryName": "OpenWOP v1 (and AG-UI, LangGraph, MCP, A2A)",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: false,
  tryItOutEnabled: false,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout",
});
