"""The dashboard's pages (one script per page, run by ``st.navigation``) and their shared widgets."""
