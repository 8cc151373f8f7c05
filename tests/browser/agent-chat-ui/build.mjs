// Builds agent-chat-ui into dist/, served under /agent-chat-ui/ by tests/browser/test_agent_chat_ui.py.
//
// agent-chat-ui is not published on the npm registry by itself; create-agent-chat-app (on npm) carries
// it as its "vite" template. The template is copied out of node_modules as published, its own
// dependencies are installed from the registry at the versions app-package-lock.json pins, and Vite
// bundles it. Nothing of the template is changed.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const template = join(here, "node_modules", "create-agent-chat-app", "templates", "vite");
const app = join(here, "app");

rmSync(app, { recursive: true, force: true });
cpSync(template, app, { recursive: true });
copyFileSync(join(here, "app-package-lock.json"), join(app, "package-lock.json"));
execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--ignore-scripts", "--silent"], { cwd: app, stdio: "inherit" });
execFileSync(
  join(app, "node_modules", ".bin", "vite"),
  ["build", "--base", "/agent-chat-ui/", "--outDir", join(here, "dist"), "--emptyOutDir", "--logLevel", "warn"],
  { cwd: app, stdio: "inherit" },
);
