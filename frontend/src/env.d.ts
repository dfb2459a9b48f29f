/** Module declarations for non-TypeScript imports that esbuild bundles. */
declare module "*.css";
