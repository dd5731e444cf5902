/*-------------------------------------------------------------------------
 *
 * explain_label.c
 *	  Label the node "Parallel Temp Seq Scan" in EXPLAIN's text output.
 *
 * Core prints every custom scan as "Custom Scan (<name>)", so ours would
 * read "Parallel Custom Scan (Temp Seq Scan) on t".  For the text format
 * only, the lines of an EXPLAIN pass through a DestReceiver that drops
 * that framing from the node label, so that the plan reads like one of
 * core's parallel scans.  The structured formats keep core's node type,
 * "Custom Scan" with "Custom Plan Provider": "Temp Seq Scan", which is
 * what tools that parse plans expect.  EXPLAIN output produced without a
 * utility statement (auto_explain) keeps core's label.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "nodes/parsenodes.h"
#include "tcop/dest.h"
#include "tcop/utility.h"
#include "utils/builtins.h"

#include "pg_tempbuf.h"

#define CORE_LABEL	"Custom Scan (" TB_TEMP_SCAN_NAME ")"

typedef struct LabelReceiver
{
	DestReceiver pub;
	DestReceiver *next;			/* where EXPLAIN's lines really go */
	TupleTableSlot *relabeled;
} LabelReceiver;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * If the line is a Temp Seq Scan's node label, the line without core's
 * "Custom Scan (...)" framing; else NULL.  Only the label position counts
 * (indentation, "->  ", "Parallel "), so a table called "Custom Scan (Temp
 * Seq Scan)" keeps its name.
 */
static char *
relabel_line(const char *line)
{
	const char *p = line;
	StringInfoData buf;

	while (*p == ' ')
		p++;
	if (strncmp(p, "->  ", 4) == 0)
		p += 4;
	if (strncmp(p, "Parallel ", 9) == 0)
		p += 9;
	if (strncmp(p, CORE_LABEL, strlen(CORE_LABEL)) != 0)
		return NULL;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, line, p - line);
	appendStringInfoString(&buf, TB_TEMP_SCAN_NAME);
	appendStringInfoString(&buf, p + strlen(CORE_LABEL));
	return buf.data;
}

static void
label_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	LabelReceiver *receiver = (LabelReceiver *) self;

	receiver->relabeled = MakeSingleTupleTableSlot(typeinfo, &TTSOpsVirtual);
	receiver->next->rStartup(receiver->next, operation, typeinfo);
}

static bool
label_receive(TupleTableSlot *slot, DestReceiver *self)
{
	LabelReceiver *receiver = (LabelReceiver *) self;
	TupleTableSlot *out = receiver->relabeled;
	char	   *line;
	char	   *relabeled;
	bool		result;

	/* EXPLAIN's text format: one text column, one line per tuple. */
	slot_getallattrs(slot);
	if (slot->tts_tupleDescriptor->natts != 1 || slot->tts_isnull[0])
		return receiver->next->receiveSlot(slot, receiver->next);

	line = TextDatumGetCString(slot->tts_values[0]);
	relabeled = relabel_line(line);
	pfree(line);
	if (relabeled == NULL)
		return receiver->next->receiveSlot(slot, receiver->next);

	ExecClearTuple(out);
	out->tts_values[0] = CStringGetTextDatum(relabeled);
	out->tts_isnull[0] = false;
	ExecStoreVirtualTuple(out);
	result = receiver->next->receiveSlot(out, receiver->next);
	ExecClearTuple(out);
	pfree(relabeled);
	return result;
}

static void
label_shutdown(DestReceiver *self)
{
	LabelReceiver *receiver = (LabelReceiver *) self;

	receiver->next->rShutdown(receiver->next);
	if (receiver->relabeled)
		ExecDropSingleTupleTableSlot(receiver->relabeled);
	receiver->relabeled = NULL;
}

static void
label_destroy(DestReceiver *self)
{
	pfree(self);
}

static DestReceiver *
make_label_receiver(DestReceiver *next)
{
	LabelReceiver *receiver = palloc0(sizeof(LabelReceiver));

	receiver->pub.receiveSlot = label_receive;
	receiver->pub.rStartup = label_startup;
	receiver->pub.rShutdown = label_shutdown;
	receiver->pub.rDestroy = label_destroy;
	receiver->pub.mydest = next->mydest;
	receiver->next = next;
	return &receiver->pub;
}

/* EXPLAIN in the text format (the default)? */
static bool
is_text_explain(Node *stmt)
{
	ListCell   *lc;

	if (stmt == NULL || !IsA(stmt, ExplainStmt))
		return false;
	foreach(lc, ((ExplainStmt *) stmt)->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "format") == 0 &&
			strcmp(defGetString(opt), "text") != 0)
			return false;
	}
	return true;
}

static void
tb_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	if (dest != NULL && is_text_explain(pstmt->utilityStmt))
		dest = make_label_receiver(dest);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
tb_install_explain_label(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = tb_process_utility;
}
