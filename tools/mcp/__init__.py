"""MCP servers as tool sources: stdio and streamable HTTP, one owner task per server.

Import from the modules (``tools.mcp.config``, ``.manager``, ``.connection``...): the package
itself imports nothing. The MCP SDK costs a process about half a second of start-up, and
only the connection's modules load it, so a process with no MCP server configured never
does."""
