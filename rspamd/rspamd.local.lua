-- Signals of the contact-form service's own, strong for form submissions: a person writing to a
-- business through its form rarely pastes more than a couple of links, and link farms (SEO, casino,
-- pharmacy spam) paste many. Counted over the message's text: the visitor's fields and message.

local LINKS_MANY = 4
local LINKS_FARM = 10

local links_id = rspamd_config:register_symbol({
  name = 'FORM_LINKS',
  type = 'callback',
  score = 0.0,
  group = 'contact_form',
  description = 'Links in a form message: many (FORM_MANY_LINKS) or a link farm (FORM_LINK_FARM)',
  callback = function(task)
    local count = #(task:get_urls() or {})
    if count >= LINKS_FARM then
      task:insert_result('FORM_LINK_FARM', 1.0, tostring(count))
    elseif count >= LINKS_MANY then
      task:insert_result('FORM_MANY_LINKS', 1.0, tostring(count))
    end
    return false
  end,
})

rspamd_config:register_symbol({
  name = 'FORM_MANY_LINKS',
  type = 'virtual',
  parent = links_id,
  score = 4.5,
  group = 'contact_form',
  description = 'A form message with 4 to 9 links',
})

rspamd_config:register_symbol({
  name = 'FORM_LINK_FARM',
  type = 'virtual',
  parent = links_id,
  score = 7.0,
  group = 'contact_form',
  description = 'A form message with 10 links or more',
})
