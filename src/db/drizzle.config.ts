import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes SQL migrations from schema.ts; the SQL functions live in a
// custom migration (drizzle-kit generate --custom) because drizzle-kit does not model them.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema.ts",
  out: "./src/db/migrations",
});
